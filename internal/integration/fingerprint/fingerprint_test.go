// Package fingerprint_test checks the idempotency fingerprint across the
// five HTTP adapters on one Redis: the same request has the same
// fingerprint on each of them, whatever its path's escaping; a body's
// representation (Content-Type, Content-Encoding) is part of Fingerprint2;
// and a record written under Fingerprint1, as every release since v1.0
// writes it, is honoured by a guard of either setting.
package fingerprint_test

import (
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/gofiber/fiber/v3"
	echo4 "github.com/labstack/echo/v4"
	echo5 "github.com/labstack/echo/v5"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/locker/guard/httprecord"
	"github.com/locktag/locktag/locker/redigo"
	"github.com/locktag/locktag/middleware"
	"github.com/locktag/locktag/middleware/lockecho"
	"github.com/locktag/locktag/middleware/lockecho5"
	"github.com/locktag/locktag/middleware/lockfiber"
	"github.com/locktag/locktag/middleware/stdhttp"
)

var testRedis *redistest.Server

func TestMain(m *testing.M) {
	gin.SetMode(gin.TestMode)
	redistest.Main(m, func(s *redistest.Server) { testRedis = s })
}

// route is the one route every adapter serves, in its own syntax below.
const route = "/orders/:id"

// adapter sends one request to a service whose POST route is guarded by
// the adapter's idempotency middleware and counts its executions.
type adapter struct {
	name  string
	serve func(t *testing.T, lk *locker.Locker, ran *atomic.Int64, opts ...guard.Option) func(r *http.Request) (int, string)
}

func handler(ran *atomic.Int64, body []byte) string {
	return fmt.Sprintf("ran %d on %d bytes", ran.Add(1), len(body))
}

// scoped adds the public scope every guard here uses.
func scoped(opts []guard.Option) []guard.Option {
	return append([]guard.Option{guard.WithPublicScope()}, opts...)
}

func recorder(h http.Handler) func(r *http.Request) (int, string) {
	return func(r *http.Request) (int, string) {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code, w.Body.String()
	}
}

var adapters = []adapter{
	{"net/http", func(t *testing.T, lk *locker.Locker, ran *atomic.Int64, opts ...guard.Option) func(*http.Request) (int, string) {
		opts = append(scoped(opts), stdhttp.WithRoute(func(*http.Request) string { return route }))
		m := stdhttp.MustIdempotency(lk, opts...)
		mux := http.NewServeMux()
		mux.Handle("POST /orders/{id}", m.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			_, _ = io.WriteString(w, handler(ran, b))
		})))
		return recorder(mux)
	}},
	{"gin", func(t *testing.T, lk *locker.Locker, ran *atomic.Int64, opts ...guard.Option) func(*http.Request) (int, string) {
		e := gin.New()
		e.POST(route, middleware.Idempotency(lk, scoped(opts)...), func(c *gin.Context) {
			b, _ := io.ReadAll(c.Request.Body)
			c.String(200, "%s", handler(ran, b))
		})
		return recorder(e)
	}},
	{"echo v4", func(t *testing.T, lk *locker.Locker, ran *atomic.Int64, opts ...guard.Option) func(*http.Request) (int, string) {
		e := echo4.New()
		e.POST(route, func(c echo4.Context) error {
			b, _ := io.ReadAll(c.Request().Body)
			return c.String(200, handler(ran, b))
		}, lockecho.Idempotency(lk, scoped(opts)...))
		return recorder(e)
	}},
	{"echo v5", func(t *testing.T, lk *locker.Locker, ran *atomic.Int64, opts ...guard.Option) func(*http.Request) (int, string) {
		e := echo5.New()
		e.POST(route, func(c *echo5.Context) error {
			b, _ := io.ReadAll(c.Request().Body)
			return c.String(200, handler(ran, b))
		}, lockecho5.Idempotency(lk, scoped(opts)...))
		return recorder(e)
	}},
	{"fiber", func(t *testing.T, lk *locker.Locker, ran *atomic.Int64, opts ...guard.Option) func(*http.Request) (int, string) {
		app := fiber.New()
		app.Post(route, lockfiber.Idempotency(lk, scoped(opts)...), func(c fiber.Ctx) error {
			return c.SendString(handler(ran, c.Body()))
		})
		return func(r *http.Request) (int, string) {
			resp, err := app.Test(r)
			if err != nil {
				t.Fatalf("fiber: %v", err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
	}},
}

func newLocker(t *testing.T) *locker.Locker {
	t.Helper()
	lk, err := locker.New(redigo.New(testRedis.Pool(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk.Close() })
	return lk
}

// post builds a request to target (sent as it is, escapes included).
func post(target, key, contentType, body string) *http.Request {
	r := httptest.NewRequest("POST", target, strings.NewReader(body))
	r.Header.Set("Idempotency-Key", key)
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	return r
}

var keys atomic.Int64

func newKey() string { return fmt.Sprintf("fp-%d", keys.Add(1)) }

// TestSameRequestEveryAdapter: a request sent to one adapter, then retried
// on each other with its path escaped another way, replays there under
// Fingerprint2 (which canonicalises the path); the handler ran once.
func TestSameRequestEveryAdapter(t *testing.T) {
	lk := newLocker(t)
	var ran atomic.Int64
	send := make([]func(*http.Request) (int, string), len(adapters))
	for i, a := range adapters {
		send[i] = a.serve(t, lk, &ran, guard.WithFingerprint(guard.Fingerprint2))
	}
	spellings := []string{"/orders/%E6%97%A5%20x", "/orders/%e6%97%a5%20x", "/orders/%E6%97%A5%20%78"}
	for i, a := range adapters {
		for j, b := range adapters {
			if i == j {
				continue
			}
			key := newKey()
			before := ran.Load()
			code, first := send[i](post(spellings[0], key, "application/json", `{"n":1}`))
			if code != 200 {
				t.Fatalf("%s first: %d %s", a.name, code, first)
			}
			for _, s := range spellings[1:] {
				code, again := send[j](post(s, key, "application/json", `{"n":1}`))
				if code != 200 || again != first {
					t.Errorf("%s then %s as %s: %d %q, want the replay of %q", a.name, b.name, s, code, again, first)
				}
			}
			if n := ran.Load() - before; n != 1 {
				t.Errorf("%s then %s: the handler ran %d times", a.name, b.name, n)
			}
		}
	}
}

// TestRepresentation: under Fingerprint2 the same bytes sent as JSON and
// then as a form (or compressed) are two requests: the second is refused
// 422 on every adapter; an equivalent spelling of the same media type is
// the same request. The control: under Fingerprint1, which covers no
// header, the form replays the JSON answer.
func TestRepresentation(t *testing.T) {
	lk := newLocker(t)
	const body = `a=1`
	for _, a := range adapters {
		t.Run(a.name, func(t *testing.T) {
			var ran atomic.Int64
			two := a.serve(t, lk, &ran, guard.WithFingerprint(guard.Fingerprint2))
			one := a.serve(t, lk, &ran)

			key := newKey()
			if code, b := two(post("/orders/1", key, "application/json; charset=UTF-8", body)); code != 200 {
				t.Fatalf("first: %d %s", code, b)
			}
			if code, b := two(post("/orders/1", key, "Application/JSON;charset=utf-8", body)); code != 200 || ran.Load() != 1 {
				t.Fatalf("the same media type spelt another way: %d %s, ran %d; want a replay", code, b, ran.Load())
			}
			if code, b := two(post("/orders/1", key, "application/x-www-form-urlencoded", body)); code != http.StatusUnprocessableEntity {
				t.Fatalf("the same bytes as a form: %d %s, want 422", code, b)
			}
			r := post("/orders/1", key, "application/json; charset=utf-8", body)
			r.Header.Set("Content-Encoding", "gzip")
			if code, b := two(r); code != http.StatusUnprocessableEntity {
				t.Fatalf("the same bytes said to be gzip: %d %s, want 422", code, b)
			}

			// The control: Fingerprint1 cannot tell them apart.
			key = newKey()
			if code, b := one(post("/orders/1", key, "application/json", body)); code != 200 {
				t.Fatalf("control first: %d %s", code, b)
			}
			if code, b := one(post("/orders/1", key, "application/x-www-form-urlencoded", body)); code != 200 || !strings.HasPrefix(b, "ran 2 ") {
				t.Fatalf("control: %d %s; want Fingerprint1 to replay the JSON answer", code, b)
			}
			if ran.Load() != 2 {
				t.Fatalf("ran %d times, want 2", ran.Load())
			}
		})
	}
}

// TestEarlierRecordsHonoured: a record written under Fingerprint1 (as by
// a process of an earlier release, here a guard of the default setting)
// is replayed by a guard writing Fingerprint2, and the other way round, on
// every adapter: a retry that crosses a rolling deploy is not a 422.
func TestEarlierRecordsHonoured(t *testing.T) {
	lk := newLocker(t)
	for _, a := range adapters {
		t.Run(a.name, func(t *testing.T) {
			var ran atomic.Int64
			one := a.serve(t, lk, &ran)
			two := a.serve(t, lk, &ran, guard.WithFingerprint(guard.Fingerprint2))
			for _, pair := range [][2]func(*http.Request) (int, string){{one, two}, {two, one}} {
				key := newKey()
				_, first := pair[0](post("/orders/7?x=1", key, "application/json", `{"n":7}`))
				code, again := pair[1](post("/orders/7?x=1", key, "application/json", `{"n":7}`))
				if code != 200 || again != first {
					t.Fatalf("retry: %d %q, want the replay of %q", code, again, first)
				}
			}
			if ran.Load() != 2 {
				t.Fatalf("ran %d times, want 2", ran.Load())
			}
		})
	}
}

// TestFingerprint1Unchanged: the Fingerprint1 of a request is the one
// v1.0.0 wrote (computed by that release's httprecord.Request and
// guard.Request.Identity for this request, kept here as bytes), so records
// written before the upgrade stay this request's.
func TestFingerprint1Unchanged(t *testing.T) {
	r := post("/orders/%E6%97%A5?x=1", "k", "application/json", "")
	q := httprecord.Request(r, route, "Idempotency-Key", nil)
	name, fp, err := q.Identity("", []byte(`{"n":7}`))
	if err != nil {
		t.Fatal(err)
	}
	const wantName = "idem:64qbj-uxbh_Mtc088bLvZxZHR7c9rsSQ6nmHpstrynI"
	const wantFP = "7d02c29321121f498c029e2435bc96a49b3a7fa74a96c67afcb6cabf066e7b31"
	if got := hex.EncodeToString([]byte(fp)); got != wantFP || name != wantName {
		t.Fatalf("Identity: %s %s, want v1.0.0's %s %s", name, got, wantName, wantFP)
	}
}
