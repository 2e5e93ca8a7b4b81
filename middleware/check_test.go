package middleware_test

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/middleware"
)

// TestTagMistake: a template naming a path parameter the route lacks is the
// server's mistake: 500 and a log line naming the tag and the route, never a
// client 400; the handler does not run and Redis is not touched.
func TestTagMistake(t *testing.T) {
	srv, lk := setup(t)
	var log bytes.Buffer
	tag := `key:"order:{path.orderId}"`
	ran := false
	r := gin.New()
	r.POST("/orders/:id/pay", middleware.Lock(lk, tag, guard.WithLogger(slog.New(slog.NewTextHandler(&log, nil)))),
		func(c *gin.Context) { ran = true })
	before := evalCalls(t, srv)
	rec := do(r, http.MethodPost, "/orders/7/pay", "")
	if rec.Code != http.StatusInternalServerError || ran || !problemType(t, rec.Body.Bytes(), "lock-tag-mistake") {
		t.Fatalf("%d (ran %v): %s", rec.Code, ran, rec.Body)
	}
	if line := log.String(); !strings.Contains(line, "order:{path.orderId}") || !strings.Contains(line, `name="POST /orders/:id/pay"`) {
		t.Fatalf("log line %q names neither the tag nor the route", line)
	}
	if evalCalls(t, srv) != before {
		t.Fatal("Redis was touched")
	}
}

// TestCheckRoutes: the start-up check finds the mistake before traffic,
// without running any handler.
func TestCheckRoutes(t *testing.T) {
	_, lk := setup(t)
	ran := 0
	handler := func(c *gin.Context) { ran++ }
	build := func(gate bool, payTag string) *gin.Engine {
		r := gin.New()
		if gate {
			r.Use(middleware.RouteCheck())
		}
		r.Use(gin.Recovery())
		r.POST("/orders/:id/pay",
			middleware.Idempotency(lk, guard.WithPublicScope()),
			middleware.Lock(lk, `key:"api:{header.X-User}" rate:"5/s"`), // checked, then on to the lock
			middleware.Lock(lk, payTag), handler)
		r.GET("/orders/:id", handler) // no lock: a probe must stop before the handler
		r.PUT("/carts/*path", middleware.Lock(lk, `key:"cart:{path.path}"`), handler)
		r.Use(middleware.LockRules(lk, middleware.Rules{"DELETE /x/:id": `key:"x:{path.id}"`}))
		r.DELETE("/x/:id", handler)
		return r
	}
	for _, tc := range []struct {
		name string
		gate bool
		tag  string
		want error
		msg  string
	}{
		{"good", true, `key:"order:{path.id}"`, nil, ""},
		{"mistake", true, `key:"order:{path.orderId}"`, middleware.ErrBadRule, "POST /orders/:id/pay"},
		{"no RouteCheck", false, `key:"order:{path.id}"`, middleware.ErrNotChecked, "RouteCheck"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := middleware.CheckRoutes(build(tc.gate, tc.tag))
			if !errors.Is(err, tc.want) || (err == nil) != (tc.want == nil) || (err != nil && !strings.Contains(err.Error(), tc.msg)) {
				t.Fatalf("CheckRoutes: %v, want %v saying %q", err, tc.want, tc.msg)
			}
			if ran != 0 {
				t.Fatalf("a handler ran %d times for probes", ran)
			}
		})
	}
	// The gate changes nothing for real requests.
	r := build(true, `key:"order:{path.id}"`)
	if rec := do(r, http.MethodGet, "/orders/1", ""); rec.Code != http.StatusOK || ran != 1 {
		t.Fatalf("GET through RouteCheck: %d, ran %d", rec.Code, ran)
	}
}
