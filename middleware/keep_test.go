package middleware_test

import (
	"net/http"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/locktag/locktag/middleware"
)

// TestKeepAfter2xxOnly: a keep tag keeps the lock after a 2xx answer (the
// resubmit is 409) and not after a non-2xx one (the retry runs).
func TestKeepAfter2xxOnly(t *testing.T) {
	_, lk := setup(t)
	status := http.StatusBadRequest
	r := gin.New()
	r.POST("/pay/:id", middleware.Lock(lk, `key:"keep:{path.id}" keep:"1m"`), func(c *gin.Context) { c.Status(status); c.Writer.WriteHeaderNow() })
	for i, want := range []int{400, 400} {
		if got := do(r, "POST", "/pay/1", "").Code; got != want {
			t.Fatalf("request %d after a 400: %d, want %d (a non-2xx answer keeps nothing)", i, got, want)
		}
	}
	status = http.StatusOK
	if got := do(r, "POST", "/pay/1", "").Code; got != http.StatusOK {
		t.Fatalf("first 2xx: %d", got)
	}
	if got := do(r, "POST", "/pay/1", "").Code; got != http.StatusConflict {
		t.Fatalf("resubmit after a 200: %d, want 409", got)
	}
}
