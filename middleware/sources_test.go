package middleware_test

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/middleware"
)

type user struct{ id string }

func (u user) String() string { return u.id }

// TestSources: each source resolves the lock name from its part of the
// request, escaped.
func TestSources(t *testing.T) {
	_, lk := setup(t)
	opts := []middleware.Option{
		middleware.WithSource("ctx", middleware.GinKeys("user", "n", "u")),
		middleware.WithSource("tenant", middleware.SourceFunc(func(c *gin.Context) (string, error) {
			return c.GetHeader("X-Tenant"), nil
		})),
	}
	auth := func(c *gin.Context) {
		c.Set("user", "u7")
		c.Set("n", 42)
		c.Set("u", user{"alice"})
		c.Next()
	}
	form := "application/x-www-form-urlencoded"
	for _, tc := range []struct {
		tmpl, method, target, body string
		hdr                        []string
		want                       string
	}{
		{"o:{path.id}", "POST", "/t/42", "", nil, "o:42"},
		{"o:{path.id}", "POST", "/t/4:2%20x", "", nil, "o:4%3A2%20x"},
		{"q:{query.sku}", "POST", "/t/1?sku=A-1&sku=B", "", nil, "q:A-1"},
		{"f:{form.sku}", "POST", "/t/1", "sku=A%3A1", []string{"Content-Type", form}, "f:A%3A1"},
		{"h:{header.x-user-id}", "POST", "/t/1", "", []string{"X-User-Id", "u 7"}, "h:u%207"},
		{"h:{header.Host}", "POST", "/t/1", "", nil, "h:example.com"},
		{"b:{body.item.sku}", "POST", "/t/1", `{"item":{"sku":"A-1"}}`, nil, "b:A-1"},
		{"b:{body.n}", "POST", "/t/1", `{"n":12345678901234567890.50}`, nil, "b:12345678901234567890.50"},
		{"b:{body.ok}", "POST", "/t/1", `{"ok":true}`, nil, "b:true"},
		// docs/keys.md: a number and the string of the same text, a boolean
		// and its string, are one key; 42.0 and 4.2e1 are not 42.
		{"b:{body.ok}", "POST", "/t/1", `{"ok":"true"}`, nil, "b:true"},
		{"b:{body.n}", "POST", "/t/1", `{"n":42}`, nil, "b:42"},
		{"b:{body.n}", "POST", "/t/1", `{"n":"42"}`, nil, "b:42"},
		{"b:{body.n}", "POST", "/t/1", `{"n":42.0}`, nil, "b:42.0"},
		{"b:{body.n}", "POST", "/t/1", `{"n":4.2e1}`, nil, "b:4.2e1"},
		{"b:{body.items.1.sku}", "POST", "/t/1", `{"items":[{"sku":"x"},{"sku":"y"}]}`, nil, "b:y"},
		{"b:{body.s}", "POST", "/t/1", `{"s":"a\"b:c"}`, nil, `b:a"b%3Ac`},
		{"{method}:{route}", "PUT", "/t/1", "", nil, "PUT:/t/%3Aid"},
		{"ip:{ip}", "POST", "/t/1", "", nil, "ip:192.0.2.1"},
		{"u:{ctx.user}:{ctx.n}:{ctx.u}", "POST", "/t/1", "", nil, "u:u7:42:alice"},
		{"t:{tenant}", "POST", "/t/1", "", []string{"X-Tenant", "acme"}, "t:acme"},
	} {
		t.Run(tc.tmpl+" "+tc.target, func(t *testing.T) {
			r := gin.New()
			r.Handle(tc.method, "/t/:id", auth, middleware.Lock(lk, `key:"`+tc.tmpl+`"`, opts...), leaseKey)
			rec := do(r, tc.method, tc.target, tc.body, tc.hdr...)
			if rec.Code != http.StatusOK || rec.Body.String() != tc.want {
				t.Fatalf("%d %q, want 200 %q", rec.Code, rec.Body, tc.want)
			}
		})
	}
}

// TestBadKeyValues: a missing, empty or over-long value, or a body that
// cannot give one, is a 400 (413 for an over-long body) and Redis is never
// asked.
func TestBadKeyValues(t *testing.T) {
	srv, lk := setup(t)
	long := strings.Repeat("x", 257)
	var gotErr error
	opts := []middleware.Option{
		guard.WithMaxRequestBytes(64),
		guard.WithLogger(slog.New(slog.DiscardHandler)), // TestTagMistake reads the log
		middleware.WithSource("ctx", middleware.GinKeys()),
		middleware.WithErrorHandler(func(c *gin.Context, o guard.Outcome, status int) {
			gotErr = o.Err
			middleware.WriteProblem(c, o, status)
		}),
	}
	for _, tc := range []struct {
		name, tmpl, target, body string
		hdr                      []string
		status                   int
		want                     error
	}{
		{"path param the route lacks", "o:{path.nope}", "/b/1", "", nil, 500, middleware.ErrNoRouteParam},
		{"missing query", "q:{query.sku}", "/b/1", "", nil, 400, keyexpr.ErrMissingValue},
		{"empty query", "q:{query.sku}", "/b/1?sku=", "", nil, 400, keyexpr.ErrMissingValue},
		{"missing header", "h:{header.X-User}", "/b/1", "", nil, 400, keyexpr.ErrMissingValue},
		{"missing form", "f:{form.sku}", "/b/1", "", nil, 400, keyexpr.ErrMissingValue},
		{"missing gin key", "u:{ctx.user}", "/b/1", "", nil, 400, keyexpr.ErrMissingValue},
		{"long header", "h:{header.X-User}", "/b/1", "", []string{"X-User", long}, 400, keyexpr.ErrValueTooLong},
		{"long path", "o:{path.id}", "/b/" + long, "", nil, 400, keyexpr.ErrValueTooLong},
		{"empty body", "b:{body.sku}", "/b/1", "", nil, 400, keyexpr.ErrMissingValue},
		{"missing body field", "b:{body.sku}", "/b/1", `{"other":1}`, nil, 400, keyexpr.ErrMissingValue},
		{"null body field", "b:{body.sku}", "/b/1", `{"sku":null}`, nil, 400, keyexpr.ErrMissingValue},
		{"empty body string", "b:{body.sku}", "/b/1", `{"sku":""}`, nil, 400, keyexpr.ErrMissingValue},
		{"body field is an object", "b:{body.sku}", "/b/1", `{"sku":{"a":1}}`, nil, 400, middleware.ErrBodyNotScalar},
		{"body field is an array", "b:{body.sku}", "/b/1", `{"sku":[1]}`, nil, 400, middleware.ErrBodyNotScalar},
		{"body not JSON", "b:{body.sku}", "/b/1", `sku=1`, nil, 400, middleware.ErrBodyNotJSON},
		{"body with trailing data", "b:{body.sku}", "/b/1", `{"sku":"a"} {}`, nil, 400, middleware.ErrBodyNotJSON},
		{"body too large", "b:{body.sku}", "/b/1", `{"sku":"a","pad":"` + strings.Repeat("p", 64) + `"}`, nil, 413, middleware.ErrBodyTooLarge},
		{"second value missing", "o:{path.id}:{query.x}", "/b/1", "", nil, 400, keyexpr.ErrMissingValue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ran := false
			r := gin.New()
			r.POST("/b/:id", middleware.Lock(lk, `key:"`+tc.tmpl+`"`, opts...), func(c *gin.Context) { ran = true })
			gotErr = nil
			before := evalCalls(t, srv)
			rec := do(r, http.MethodPost, tc.target, tc.body, tc.hdr...)
			if rec.Code != tc.status || ran {
				t.Fatalf("status %d (handler ran: %v), want %d: %s", rec.Code, ran, tc.status, rec.Body)
			}
			if !errors.Is(gotErr, tc.want) {
				t.Fatalf("error %v, want %v", gotErr, tc.want)
			}
			kind := "bad-lock-key"
			switch tc.status {
			case 413:
				kind = "body-too-large"
			case 500:
				kind = "lock-tag-mistake"
			}
			if !problemType(t, rec.Body.Bytes(), kind) {
				t.Fatalf("body %s, want problem type %s", rec.Body, kind)
			}
			if body := rec.Body.String(); strings.Contains(body, long) || strings.Contains(body, tc.tmpl) {
				t.Fatalf("the problem body leaks the value or template: %s", body)
			}
			if after := evalCalls(t, srv); after != before {
				t.Fatalf("Redis ran %d scripts for a refused request", after-before)
			}
		})
	}
	if n, err := srv.Do("DBSIZE"); err != nil || n.(int64) != 0 {
		t.Fatalf("DBSIZE %v, %v: refused requests wrote to Redis", n, err)
	}
}

// TestLongValueHashed: with long:"hash" an over-long value names a lock of
// bounded size instead of being refused.
func TestLongValueHashed(t *testing.T) {
	_, lk := setup(t)
	r := gin.New()
	r.POST("/h", middleware.Lock(lk, `key:"h:{header.X-Doc}" long:"hash"`), leaseKey)
	rec := do(r, http.MethodPost, "/h", "", "X-Doc", strings.Repeat("d", 1000))
	if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Body.String(), "h:%sha256") || rec.Body.Len() != len("h:%sha256")+64 {
		t.Fatalf("%d %q", rec.Code, rec.Body)
	}
}

// TestBodyRestored: the handler reads the whole body as sent, also through
// gin's binders, after the key was taken from it.
func TestBodyRestored(t *testing.T) {
	_, lk := setup(t)
	body := `{"item":{"sku":"A-1"},"qty":3,"note":"` + strings.Repeat("n", 5000) + `"}`
	var raw string
	var bound struct {
		Item struct{ Sku string }
		Qty  int
	}
	r := gin.New()
	r.POST("/raw", middleware.Lock(lk, `key:"sku:{body.item.sku}:{body.qty}"`), func(c *gin.Context) {
		b, err := io.ReadAll(c.Request.Body)
		if err != nil {
			t.Error(err)
		}
		raw = string(b)
		leaseKey(c)
	})
	r.POST("/bind", middleware.Lock(lk, `key:"sku:{body.item.sku}:{body.qty}"`), func(c *gin.Context) {
		if err := c.ShouldBindJSON(&bound); err != nil {
			t.Error(err)
		}
		leaseKey(c)
	})
	if rec := do(r, http.MethodPost, "/raw", body); rec.Code != http.StatusOK || rec.Body.String() != "sku:A-1:3" || raw != body {
		t.Fatalf("raw: %d %q; handler read %d of %d bytes", rec.Code, rec.Body, len(raw), len(body))
	}
	if rec := do(r, http.MethodPost, "/bind", body); rec.Code != http.StatusOK || bound.Item.Sku != "A-1" || bound.Qty != 3 {
		t.Fatalf("bind: %d %+v", rec.Code, bound)
	}
}

// TestConstructionErrors: every mistake is reported when the middleware is
// built, with the tag, the field and the byte position.
func TestConstructionErrors(t *testing.T) {
	_, lk := setup(t)
	for _, tc := range []struct {
		name string
		tag  string
		opts []middleware.Option
		want error
		msg  string
	}{
		{"unknown field", `key:"o:{path.id}" expiry:"1s"`, nil, keyexpr.ErrUnknownField, "field expiry at byte 18"},
		{"bad duration", `key:"o:{path.id}" wait:"2"`, nil, keyexpr.ErrBadDuration, "field wait at byte 23"},
		{"unknown source", `key:"o:{pth.id}" wait:"1s"`, nil, keyexpr.ErrUnknownSource, "field key at byte 7"},
		{"unknown source after escape", `key:"o\u0041:{pth.id}"`, nil, keyexpr.ErrUnknownSource, "field key at byte 4"},
		{"ctx without WithSource", `key:"u:{ctx.user}"`, nil, keyexpr.ErrUnknownSource, "field key at byte 7"},
		{"gin key not allowed", `key:"u:{ctx.usr}"`, []middleware.Option{middleware.WithSource("ctx", middleware.GinKeys("user"))}, nil, `"usr" is not one of the allowed keys`},
		{"bare source with path", `key:"m:{method.x}"`, nil, nil, "source method takes no name"},
		{"named source without path", `key:"q:{query}"`, nil, nil, "source query needs a name"},
		{"bad max body", `key:"o:{path.id}"`, []middleware.Option{guard.WithMaxRequestBytes(0)}, locker.ErrBadOption, "WithMaxRequestBytes: 0"},
		{"bad max value", `key:"o:{path.id}"`, []middleware.Option{guard.WithMaxValueLen(0)}, locker.ErrBadOption, "WithMaxValueLen: 0"},
		{"nil error handler", `key:"o:{path.id}"`, []middleware.Option{middleware.WithErrorHandler(nil)}, locker.ErrBadOption, "middleware.WithErrorHandler: nil handler"},
		{"nil source", `key:"o:{path.id}"`, []middleware.Option{middleware.WithSource("x", nil)}, locker.ErrBadOption, "WithSource"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := middleware.NewLock(lk, tc.tag, tc.opts...)
			if err == nil || h != nil {
				t.Fatalf("NewLock(%s) = %v, nil", tc.tag, h != nil)
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %q does not say %q", err, tc.msg)
			}
			var te *keyexpr.TagError
			if errors.As(err, &te) && (te.Tag != tc.tag || !strings.Contains(err.Error(), "`"+tc.tag+"`")) {
				t.Fatalf("error %q does not name the tag", err)
			}
			func() {
				defer func() {
					if p := recover(); p == nil || fmt.Sprint(p) != err.Error() {
						t.Fatalf("Lock panicked with %v, want %v", p, err)
					}
				}()
				middleware.Lock(lk, tc.tag, tc.opts...)
			}()
		})
	}
	if _, err := middleware.NewLock(nil, `key:"x"`); !errors.Is(err, guard.ErrNilLocker) {
		t.Fatalf("nil locker: %v", err)
	}
}
