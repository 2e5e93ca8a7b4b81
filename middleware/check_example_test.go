package middleware_test

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/middleware"
)

// ExampleCheckRoutes is the start-up of docs/getting-started.md: the
// route-check gate first, the routes, then the check before traffic. The
// tag on /orders/:id/pay names {path.orderId}, a parameter the route does
// not have.
func ExampleCheckRoutes() {
	lk := newLocker()
	defer lk.Close()

	r := gin.New()
	r.Use(middleware.RouteCheck()) // first: lets CheckRoutes probe the routes
	r.Use(gin.LoggerWithConfig(gin.LoggerConfig{Skip: middleware.IsProbe}), gin.Recovery())
	r.POST("/orders/:id/pay",
		middleware.Lock(lk, `key:"order:{path.orderId}" wait:"1500ms"`),
		func(c *gin.Context) { c.Status(http.StatusOK) })
	r.POST("/payments",
		middleware.Idempotency(lk, guard.WithScope(func(c *gin.Context) (string, error) {
			return c.GetHeader("X-User"), nil // in a real service: the authenticated user
		})),
		func(c *gin.Context) { c.Status(http.StatusCreated) })

	err := middleware.CheckRoutes(r)
	fmt.Println(errors.Is(err, middleware.ErrBadRule))
	fmt.Println(err)
	// Output:
	// true
	// guard: bad rule: POST /orders/:id/pay: keyexpr: tag `key:"order:{path.orderId}" wait:"1500ms"`: field key at byte 11: template "order:{path.orderId}": placeholder {path.orderId} at byte 6: the rule's route has no parameter :orderId (it has :id)
}

// ExampleWithErrorHandler answers a busy lock with 429 instead of 409, in
// the API's own error format (docs/problems.md has the default one).
func ExampleWithErrorHandler() {
	lk := newLocker()
	defer lk.Close()
	tag := `key:"order:{path.id}"`

	r := gin.New()
	r.POST("/orders/:id/pay", middleware.Lock(lk, tag, middleware.WithErrorHandler(func(c *gin.Context, o guard.Outcome, status int) {
		if o.Kind == guard.Busy {
			status = http.StatusTooManyRequests
		}
		c.JSON(status, gin.H{"error": http.StatusText(status)})
	})), func(c *gin.Context) {})
	fmt.Println(middleware.Status(guard.Busy))
	// Output: 409
}
