package lockecho_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gomodule/redigo/redis"
	"github.com/labstack/echo/v4"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/redigo"
)

// setup starts a redis-server and a Locker on it.
func setup(t testing.TB) (*redistest.Server, *locker.Locker) {
	t.Helper()
	srv := redistest.Start(t)
	lk, err := locker.New(redigo.New(srv.Pool(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk.Close() })
	return srv, lk
}

// do runs one in-process request through h; hdr is "Name", "value" pairs.
func do(h http.Handler, method, target, body string, hdr ...string) *httptest.ResponseRecorder {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, rd)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// leaseKey answers 200 with the key of the lock the request holds ("" without one).
func leaseKey(c echo.Context) error {
	name := ""
	if le := locker.FromContext(c.Request().Context()); le != nil {
		name = le.Key()
	}
	return c.String(http.StatusOK, name)
}

// evalCalls counts the scripts Redis has run, to show a request never
// reached it.
func evalCalls(t testing.TB, srv *redistest.Server) int {
	t.Helper()
	s, err := redis.String(srv.Do("INFO", "commandstats"))
	if err != nil {
		t.Fatalf("INFO commandstats: %v", err)
	}
	n := 0
	for line := range strings.Lines(s) {
		if strings.HasPrefix(line, "cmdstat_eval:") || strings.HasPrefix(line, "cmdstat_evalsha:") {
			_, rest, _ := strings.Cut(line, "calls=")
			rest, _, _ = strings.Cut(rest, ",")
			for _, ch := range rest {
				n = n*10 + int(ch-'0')
			}
		}
	}
	return n
}

// problemType reports whether body is a problem+json body of kind.
func problemType(t testing.TB, body []byte, kind string) bool {
	t.Helper()
	var p struct {
		Type   string `json:"type"`
		Title  string `json:"title"`
		Status int    `json:"status"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		t.Errorf("not a problem+json body: %s", body)
		return false
	}
	return strings.HasSuffix(p.Type, "#"+kind) && p.Title != "" && p.Status != 0
}
