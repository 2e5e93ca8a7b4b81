package examples_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"

	"github.com/gin-gonic/gin"

	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/locker/locktest"
	"github.com/locktag/locktag/middleware"
)

// A Gin route behind middleware.Lock and middleware.Idempotency, in the
// lock's and the key's states. In a test, t is the test's *testing.T.
func Example_gin() {
	var t locktest.Standalone
	defer t.Close()
	k := locktest.New(&t)
	gin.SetMode(gin.ReleaseMode)
	const tag = `key:"order:{path.id}"`
	var charged atomic.Int32
	r := gin.New()
	scope := guard.WithScope(func(c *gin.Context) (string, error) { return c.GetHeader("X-User"), nil })
	r.POST("/orders/:id/pay", middleware.Idempotency(k.Locker(), scope), middleware.Lock(k.Locker(), tag),
		func(c *gin.Context) {
			charged.Add(1)
			c.String(http.StatusCreated, "charged")
		})
	post := func(key string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/orders/42/pay", strings.NewReader(`{}`))
		req.Header.Set("Idempotency-Key", key)
		req.Header.Set("X-User", "alice")
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, req)
		return rec
	}

	release := k.Hold(k.Key(tag, locktest.Values{"path.id": "42"}))
	fmt.Println("held elsewhere:", post(`"a"`).Code, charged.Load())
	release()
	fmt.Println("retried after release:", post(`"a"`).Code, charged.Load())

	k.Down()
	fmt.Println("Redis down:", post(`"b"`).Code)
	k.Up()

	first := httptest.NewRequest("POST", "/orders/42/pay", strings.NewReader(`{}`))
	first.Header.Set("Idempotency-Key", `"c"`)
	k.Completed(locktest.HTTPCall{Request: first, Route: "/orders/:id/pay", Scope: "alice"},
		http.StatusCreated, nil, []byte("charged earlier"))
	rec := post(`"c"`)
	fmt.Println("completed:", rec.Code, rec.Body, charged.Load())
	// Output:
	// held elsewhere: 409 0
	// retried after release: 201 1
	// Redis down: 503
	// completed: 201 charged earlier 1
}
