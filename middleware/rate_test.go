package middleware_test

import (
	"net/http"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/locktag/locktag/middleware"
)

// A rate tag on a Gin route: admitted requests carry the RateLimit fields
// (set before the handler writes), the one over the rate is 429 with
// Retry-After, the fields and a rate-limited problem; the handler holds
// no lock. A lock tag chained after it is taken as usual.
func TestRateLimitRoute(t *testing.T) {
	_, lk := setup(t)
	r := gin.New()
	r.POST("/orders/:id/pay",
		middleware.Lock(lk, `key:"api:{header.X-User}" rate:"2/1m" name:"pay"`),
		middleware.Lock(lk, `key:"order:{path.id}"`),
		leaseKey)
	for i, want := range []string{`"pay";r=1;t=30`, `"pay";r=0;t=60`} {
		w := do(r, "POST", "/orders/7/pay", "", "X-User", "u1")
		if w.Code != http.StatusOK || w.Body.String() != "order:7" || w.Header().Get("RateLimit") != want ||
			w.Header().Get("RateLimit-Policy") != `"pay";q=2;w=60` || w.Header().Get("Retry-After") != "" {
			t.Fatalf("request %d: %d %q %v", i, w.Code, w.Body, w.Header())
		}
	}
	w := do(r, "POST", "/orders/7/pay", "", "X-User", "u1")
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "30" || w.Header().Get("RateLimit") != `"pay";r=0;t=30` ||
		w.Header().Get("Content-Type") != middleware.ProblemContentType {
		t.Fatalf("over the rate: %d %q %v", w.Code, w.Body, w.Header())
	}
	if w := do(r, "POST", "/orders/7/pay", "", "X-User", "u2"); w.Code != http.StatusOK {
		t.Fatalf("another user: %d", w.Code)
	}
	if w := do(r, "POST", "/orders/7/pay", ""); w.Code != http.StatusBadRequest {
		t.Fatalf("no user: %d", w.Code)
	}
	// The handler of a rate tag alone holds no lock.
	only := gin.New()
	only.GET("/x", middleware.Lock(lk, `key:"x:{header.X-User}" rate:"5/s"`), leaseKey)
	if w := do(only, "GET", "/x", "", "X-User", "u1"); w.Code != http.StatusOK || w.Body.String() != "" {
		t.Fatalf("rate only: %d %q", w.Code, w.Body)
	}
}
