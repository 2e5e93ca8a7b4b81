package ops_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/ops"
	"github.com/locktag/locktag/locker/redigo"
)

// exampleRedis is a redis-server started for the examples by TestMain.
var exampleRedis *redistest.Server

func TestMain(m *testing.M) {
	redistest.Main(m, func(s *redistest.Server) { exampleRedis = s })
}

// newLocker returns a Locker on a fresh redis-server.
func newLocker(t *testing.T) (*locker.Locker, *redistest.Server) {
	t.Helper()
	srv := redistest.Start(t)
	lk, err := locker.New(redigo.New(srv.Pool(t)), locker.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk.Close() })
	return lk, srv
}

// serve mounts the ops handler at /debug/locktag/ on a test server.
func serve(t *testing.T, lk *locker.Locker, opts ...ops.Option) *httptest.Server {
	t.Helper()
	h, err := ops.NewHandler(lk, opts...)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/debug/locktag/", h)
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts
}

// obtain takes a lock for the test and releases it at the end.
func obtain(t *testing.T, lk *locker.Locker, name string) *locker.Lease {
	t.Helper()
	le, err := lk.Obtain(t.Context(), name, locker.Params{TTL: time.Minute})
	if err != nil {
		t.Fatalf("Obtain(%q): %v", name, err)
	}
	t.Cleanup(func() { _ = le.Release(t.Context()) })
	return le
}

// answer is one HTTP answer.
type answer struct {
	status int
	header http.Header
	body   string
}

// decode decodes the body as JSON into v.
func (a answer) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(a.body), v); err != nil {
		t.Fatalf("body %q: %v", a.body, err)
	}
}

// errorText is the body's JSON error.
func (a answer) errorText(t *testing.T) string {
	t.Helper()
	var e struct{ Error string }
	a.decode(t, &e)
	if e.Error == "" {
		t.Fatalf("no JSON error in %d %q", a.status, a.body)
	}
	return e.Error
}

// do sends one request; body, if not "", is sent as JSON.
func do(t *testing.T, method, url, body string, header ...string) answer {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(resp.Body); err != nil {
		t.Fatal(err)
	}
	return answer{resp.StatusCode, resp.Header, b.String()}
}

// post sends a force-release with the CSRF header.
func post(t *testing.T, url, body string, header ...string) answer {
	t.Helper()
	return do(t, http.MethodPost, url, body, append([]string{"X-Locktag-Ops", "1"}, header...)...)
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.Eventually(t, what, cond)
}

// allowAll is an authorizer that allows everything.
func allowAll(*http.Request, ops.Action, string) error { return nil }

// testwaitRecv waits for one error from ch.
func testwaitRecv(t *testing.T, ch <-chan error) error {
	t.Helper()
	return testwait.Recv(t, ch, "the waiter to end")
}

func jsonDecode(s string, v any) error { return json.Unmarshal([]byte(s), v) }
