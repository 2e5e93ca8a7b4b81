package reliability

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/middleware"
)

// seenKeys records, per request id, the lock name the handler held and
// whether that exact lock existed in Redis while it ran.
type seenKeys struct {
	mu sync.Mutex
	m  map[string]string
}

func (s *seenKeys) set(id, v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[id] = v
}

func (s *seenKeys) get(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[id]
}

// abuseRouter has a locked route per key source; each handler reports the
// lock it holds.
func abuseRouter(t *testing.T, srv *redistest.Server, lk *locker.Locker, seen *seenKeys) *gin.Engine {
	r := gin.New()
	h := func(c *gin.Context) {
		le := locker.FromContext(c.Request.Context())
		v := "<no lease>"
		if le != nil {
			v = le.Key()
			if owner(t, srv, le.Key()) == "" {
				v += " <not in redis>"
			}
		}
		seen.set(c.GetHeader("X-Case"), v)
		c.Status(http.StatusNoContent)
	}
	opts := []middleware.Option{guard.WithMaxRequestBytes(1024)}
	r.POST("/orders/:id/pay", middleware.Lock(lk, `key:"order:{path.id}" expire:"10s"`, opts...), h)
	r.POST("/pair/:a/:b", middleware.Lock(lk, `key:"pair:{path.a}:{path.b}" expire:"10s"`, opts...), h)
	r.POST("/hashed/:id", middleware.Lock(lk, `key:"h:{path.id}" expire:"10s" long:"hash"`, opts...), h)
	r.POST("/user", middleware.Lock(lk, `key:"user:{header.X-User}" expire:"10s"`, opts...), h)
	r.POST("/q", middleware.Lock(lk, `key:"q:{query.v}" expire:"10s"`, opts...), h)
	r.POST("/body", middleware.Lock(lk, `key:"sku:{body.item.sku}" expire:"10s"`, opts...), h)
	return r
}

// TestGinAbuse sends hostile values through every key source of the Gin
// adapter. Each request is either refused with its 4xx before Redis is
// touched (INFO commandstats shows no command), or runs its handler holding
// exactly the lock named by the escaped value — never a shorter or forged
// name.
func TestGinAbuse(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv.Pool(t))
	seen := &seenKeys{m: map[string]string{}}
	r := abuseRouter(t, srv, lk, seen)
	long := strings.Repeat("x", 300)

	type tc struct {
		name    string
		req     func() *http.Request
		status  int
		wantKey string // "" when refused
	}
	post := func(target string) func() *http.Request {
		return func() *http.Request { return httptest.NewRequest(http.MethodPost, target, nil) }
	}
	header := func(v ...string) func() *http.Request {
		return func() *http.Request {
			req := httptest.NewRequest(http.MethodPost, "/user", nil)
			req.Header["X-User"] = v // raw: CR, LF and NUL as a broken proxy could pass them
			return req
		}
	}
	body := func(b string) func() *http.Request {
		return func() *http.Request {
			req := httptest.NewRequest(http.MethodPost, "/body", strings.NewReader(b))
			req.Header.Set("Content-Type", "application/json")
			return req
		}
	}
	cases := []tc{
		{"braces", post("/orders/%7Bx%7D/pay"), 204, "order:%7Bx%7D"},
		{"inverted hash tag", post("/orders/%7Dx%7B/pay"), 204, "order:%7Dx%7B"},
		{"separator", post("/orders/a:b/pay"), 204, "order:a%3Ab"},
		{"percent", post("/orders/100%25/pay"), 204, "order:100%25"},
		{"CR LF", post("/orders/a%0D%0Ab/pay"), 204, "order:a%0D%0Ab"},
		{"NUL", post("/orders/a%00b/pay"), 204, "order:a%00b"},
		{"space and DEL", post("/orders/a%20%7Fb/pay"), 204, "order:a%20%7Fb"},
		{"invalid UTF-8", post("/orders/%FF%FE/pay"), 204, "order:%FF%FE"},
		{"valid UTF-8 kept", post("/orders/%C3%A9t%C3%A9/pay"), 204, "order:été"},
		{"pair a:b + c", post("/pair/a:b/c"), 204, "pair:a%3Ab:c"},
		{"pair a + b:c", post("/pair/a/b:c"), 204, "pair:a:b%3Ac"},
		{"huge path value", post("/orders/" + long + "/pay"), 400, ""},
		{"huge value hashed", post("/hashed/" + long), 204, "h:%sha256" + sha256hex(long)},
		{"header CR LF injection", header("u\r\nDEL x"), 204, "user:u%0D%0ADEL%20x"},
		{"header NUL", header("u\x00v"), 204, "user:u%00v"},
		{"header invalid UTF-8", header("\xc3\x28"), 204, "user:%C3("},
		{"header missing", header(), 400, ""},
		{"header empty", header(""), 400, ""},
		{"header huge", header(long), 400, ""},
		{"query missing", post("/q"), 400, ""},
		{"query empty", post("/q?v="), 400, ""},
		{"query huge", post("/q?v=" + long), 400, ""},
		{"query braces", post("/q?v=%7B%7D"), 204, "q:%7B%7D"},
		{"body braces", body(`{"item":{"sku":"{A}:1"}}`), 204, "sku:%7BA%7D%3A1"},
		{"body big number exact", body(`{"item":{"sku":123456789012345678901234567890}}`), 204, "sku:123456789012345678901234567890"},
		{"body escaped NUL", body(`{"item":{"sku":"a\u0000b"}}`), 204, "sku:a%00b"},
		{"body too large", body(`{"item":{"sku":"a"},"pad":"` + strings.Repeat("p", 2048) + `"}`), 413, ""},
		{"body not JSON", body(`{"item":`), 400, ""},
		{"body trailing data", body(`{"item":{"sku":"a"}} {}`), 400, ""},
		{"body field is an object", body(`{"item":{"sku":{"x":1}}}`), 400, ""},
		{"body field missing", body(`{"item":{}}`), 400, ""},
		{"body field null", body(`{"item":{"sku":null}}`), 400, ""},
		{"body field empty", body(`{"item":{"sku":""}}`), 400, ""},
	}
	keys := map[string]string{}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := fmt.Sprint(i)
			req := c.req()
			req.Header.Set("X-Case", id)
			resetStats(t, srv)
			w := serveHTTP(r, req)
			calls := commandCalls(t, srv)
			if w.Code != c.status {
				t.Fatalf("status %d, want %d; body %s", w.Code, c.status, w.Body)
			}
			got := seen.get(id)
			if c.wantKey == "" {
				if len(calls) != 0 {
					t.Fatalf("refused request touched Redis: %v", calls)
				}
				if got != "" {
					t.Fatalf("handler ran holding %q", got)
				}
				if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, middleware.ProblemContentType) {
					t.Errorf("content type %q, want problem+json", ct)
				}
				return
			}
			if got != c.wantKey {
				t.Fatalf("handler held %q, want %q", got, c.wantKey)
			}
			if prev, dup := keys[got]; dup {
				t.Fatalf("cases %q and %q locked the same key %q", prev, c.name, got)
			}
			keys[got] = c.name
		})
	}
}

// TestGinIdempotencyAbuse: malformed Idempotency-Key fields and oversized
// bodies are refused with 400 / 413 before Redis is touched; a good key runs.
func TestGinIdempotencyAbuse(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv.Pool(t))
	var runs int
	r := gin.New()
	r.POST("/payments", middleware.Idempotency(lk, guard.WithPublicScope(), guard.WithMaxRequestBytes(1024)),
		func(c *gin.Context) { runs++; c.String(http.StatusCreated, "paid") })

	req := func(body string, keys ...string) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/payments", strings.NewReader(body))
		r.Header["Idempotency-Key"] = keys
		return r
	}
	cases := []struct {
		name   string
		req    *http.Request
		status int
	}{
		{"missing", req("{}"), 400},
		{"empty", req("{}", ""), 400},
		{"empty quoted", req("{}", `""`), 400},
		{"too long", req("{}", strings.Repeat("k", 256)), 400},
		{"non-ASCII", req("{}", "ключ"), 400},
		{"CR LF", req("{}", "a\r\nb"), 400},
		{"NUL", req("{}", "a\x00b"), 400},
		{"unbalanced quote", req("{}", `"abc`), 400},
		{"bad escape", req("{}", `"a\qb"`), 400},
		{"two fields", req("{}", "a", "b"), 400},
		{"invalid UTF-8", req("{}", "\xff\xfe"), 400},
		{"body too large", req(strings.Repeat("b", 2048), "k-big"), 413},
		{"good quoted key", req(`{"amount":1}`, `"k-1"`), 201},
		{"good bare key, body at the cap", req(strings.Repeat("b", 1024), "k-2"), 201},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := runs
			resetStats(t, srv)
			w := serveHTTP(r, c.req)
			calls := commandCalls(t, srv)
			if w.Code != c.status {
				t.Fatalf("status %d, want %d; body %s", w.Code, c.status, w.Body)
			}
			if c.status >= 400 {
				if len(calls) != 0 {
					t.Fatalf("refused request touched Redis: %v", calls)
				}
				if runs != before {
					t.Fatal("handler ran")
				}
				return
			}
			if len(calls) == 0 || runs != before+1 {
				t.Fatalf("good request: calls %v, runs %d", calls, runs-before)
			}
		})
	}
}
