package middleware_test

import (
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/locker/redigo"
	"github.com/locktag/locktag/middleware"
)

// newLocker returns a Locker on a Redis at localhost:6379. Building
// middleware does not connect; only requests do.
func newLocker() *locker.Locker {
	pool := &redis.Pool{
		MaxIdle: 16,
		Dial:    func() (redis.Conn, error) { return redis.Dial("tcp", "localhost:6379") },
	}
	lk, err := locker.New(redigo.New(pool))
	if err != nil {
		log.Fatal(err)
	}
	return lk
}

func ExampleLock() {
	lk := newLocker()
	defer lk.Close()

	r := gin.New()
	r.Use(gin.Recovery()) // a panicking handler's lock is released first
	r.POST("/orders/:id/pay",
		middleware.Lock(lk, `key:"order:{path.id}" expire:"30s" wait:"2s"`),
		func(c *gin.Context) {
			lease := locker.FromContext(c.Request.Context())
			// Pass c.Request.Context() to the work the lock protects; give
			// lease.Token() to storage that checks fencing tokens.
			c.JSON(http.StatusOK, gin.H{"fence": lease.Token()})
		})

	// A mistake in a tag is found here, at registration, never per request.
	_, err := middleware.NewLock(lk, `key:"order:{pth.id}"`)
	fmt.Println(errors.Is(err, keyexpr.ErrUnknownSource))
	fmt.Println(err)
	// Output:
	// true
	// keyexpr: tag `key:"order:{pth.id}"`: field key at byte 11: template "order:{pth.id}": placeholder {pth.id} at byte 6: unknown source "pth" (known sources: body, form, header, ip, method, path, query, route)
}

// ExampleOption builds one list of options for the Gin adapter: the
// guard's, which every adapter accepts, and this package's own. Another
// adapter's option (stdhttp.WithKeyHeader, connectrpc.WithRegistry, ...)
// in it would be refused when the middleware is built: "locker: bad option:
// stdhttp.WithKeyHeader is an option of stdhttp, given to middleware
// (Gin)".
func ExampleOption() {
	lk := newLocker()
	defer lk.Close()

	opts := []middleware.Option{
		guard.WithMaxRequestBytes(64 << 10),
		guard.WithRetryAfter(2 * time.Second),
		middleware.WithErrorHandler(middleware.WriteProblem),
	}
	r := gin.New()
	r.POST("/orders/:id/pay", middleware.Lock(lk, `key:"order:{path.id}"`, opts...),
		func(c *gin.Context) { c.Status(http.StatusNoContent) })

	// A bad value is a construction error naming the option, never ignored.
	_, err := middleware.NewLock(lk, `key:"order:{path.id}"`, middleware.WithErrorHandler(nil))
	fmt.Println(errors.Is(err, locker.ErrBadOption))
	fmt.Println(err)
	// Output:
	// true
	// locker: bad option: middleware.WithErrorHandler: nil handler
}

func ExampleLockRules() {
	lk := newLocker()
	defer lk.Close()

	rules := middleware.Rules{
		"POST /orders/:id/pay":   `key:"order:{path.id}" wait:"2s"`,
		"PUT /carts/:user/items": `key:"cart:{path.user}"`,
	}
	r := gin.New()
	r.Use(middleware.LockRules(lk, rules))
	r.POST("/orders/:id/pay", func(c *gin.Context) { c.Status(http.StatusNoContent) })

	// Check after registering: a rule whose route does not exist would
	// otherwise leave nothing locked without a word.
	fmt.Println(rules.Check(r.Routes()))

	// A {path.X} the route does not have is a registration error.
	_, err := middleware.NewLockRules(lk, middleware.Rules{"POST /orders/:id/pay": `key:"order:{path.order}"`})
	fmt.Println(errors.Is(err, middleware.ErrBadRule))
	// Output:
	// guard: bad rule: no route registered for ["PUT /carts/:user/items"]
	// true
}

func ExampleGinKeys() {
	lk := newLocker()
	defer lk.Close()

	// An authentication middleware stores the caller with c.Set("user", ...);
	// {ctx.user} reads it.
	ctxKeys := middleware.WithSource("ctx", middleware.GinKeys("user"))

	r := gin.New()
	r.PUT("/carts/items", middleware.Lock(lk, `key:"cart:{ctx.user}"`, ctxKeys), func(c *gin.Context) {})

	_, err := middleware.NewLock(lk, `key:"cart:{ctx.usr}"`, ctxKeys)
	fmt.Println(err)
	// Output:
	// keyexpr: tag `key:"cart:{ctx.usr}"`: field key at byte 10: template "cart:{ctx.usr}": placeholder {ctx.usr} at byte 5: gin key "usr" is not one of the allowed keys ["user"]
}

func ExampleWriteProblem() {
	rec := httptest.NewRecorder()
	c, _ := gin.CreateTestContext(rec)
	middleware.WriteProblem(c, guard.Outcome{Kind: guard.Busy, Err: locker.ErrNotObtained}, http.StatusConflict)
	fmt.Println(rec.Code, rec.Header().Get("Content-Type"))
	fmt.Println(rec.Body)
	// Output:
	// 409 application/problem+json
	// {"type":"https://github.com/locktag/locktag/blob/main/docs/problems.md#lock-busy","title":"Resource is locked","status":409,"detail":"another request holds the lock; retry later"}
}

func ExampleFailedOpen() {
	lk := newLocker()
	defer lk.Close()

	r := gin.New()
	// Availability matters more than exclusion on this route: when Redis is
	// down (and only then) the handler runs without the lock.
	r.POST("/views/:id", middleware.Lock(lk, `key:"views:{path.id}"`, guard.WithFailOpen()),
		func(c *gin.Context) {
			if err := middleware.FailedOpen(c); err != nil {
				c.Header("X-Unlocked", "1") // or log, count, degrade
			}
			c.Status(http.StatusNoContent)
		})
}
