package lockecho5_test

import (
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/locker/redigo"
	"github.com/locktag/locktag/middleware/lockecho5"
)

// exampleRedis is a redis-server started for the package by TestMain.
var exampleRedis *redistest.Server

func TestMain(m *testing.M) {
	redistest.Main(m, func(s *redistest.Server) { exampleRedis = s })
}

// exampleLocker is a Locker on the package's redis-server.
func exampleLocker() *locker.Locker {
	lk, err := locker.New(redigo.New(exampleRedis.NewPool()))
	if err != nil {
		log.Fatal(err)
	}
	return lk
}

// ExampleLock locks an Echo route by its :id parameter.
func ExampleLock() {
	lk := exampleLocker()
	defer lk.Close()

	e := echo.New()
	e.POST("/orders/:id/pay", func(c *echo.Context) error {
		lease := locker.FromContext(c.Request().Context())
		// Pass c.Request().Context() to the work the lock protects; give
		// lease.Token() to storage that checks fencing tokens.
		return c.String(http.StatusOK, "paid while holding "+lease.Key())
	}, lockecho5.Lock(lk, `key:"order:{path.id}" expire:"30s" wait:"2s"`))

	w := httptest.NewRecorder()
	e.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/orders/42/pay", nil))
	fmt.Println(w.Code, w.Body)

	// A mistake in a tag is found here, at registration, never per request.
	_, err := lockecho5.NewLock(lk, `key:"order:{pth.id}"`)
	fmt.Println(errors.Is(err, keyexpr.ErrUnknownSource))
	// Output:
	// 200 paid while holding order:42
	// true
}

// ExampleCheckRoutes checks each route as it is added: a tag naming a
// path parameter its route does not have stops the start.
func ExampleCheckRoutes() {
	lk := exampleLocker()
	defer lk.Close()

	e := echo.New()
	if err := lockecho5.CheckRoutes(e); err != nil { // right after echo.New()
		fmt.Println(err)
		return
	}
	buy := func(c *echo.Context) error { return c.NoContent(http.StatusNoContent) }
	e.POST("/items/:id/buy", buy, lockecho5.Lock(lk, `key:"item:{path.id}"`))
	defer func() {
		err, _ := recover().(error)
		fmt.Println(errors.Is(err, lockecho5.ErrBadRule))
		fmt.Println(err)
	}()
	e.POST("/items/:sku/reserve", buy, lockecho5.Lock(lk, `key:"item:{path.id}"`))
	// Output:
	// true
	// guard: bad rule: POST /items/:sku/reserve: keyexpr: tag `key:"item:{path.id}"`: field key at byte 10: template "item:{path.id}": placeholder {path.id} at byte 5: the rule's route has no parameter :id (it has :sku)
}

// ExampleRouteCheck finds, before traffic, a tag naming a path parameter
// its route does not have.
func ExampleRouteCheck() {
	lk := exampleLocker()
	defer lk.Close()

	e := echo.New()
	rc := lockecho5.NewRouteCheck(e) // before the routes
	buy := func(c *echo.Context) error { return c.NoContent(http.StatusNoContent) }
	e.POST("/items/:id/buy", buy, lockecho5.Lock(lk, `key:"item:{path.id}"`))
	e.POST("/items/:sku/reserve", buy, lockecho5.Lock(lk, `key:"item:{path.id}"`))

	err := rc.Check()
	fmt.Println(errors.Is(err, lockecho5.ErrBadRule))
	fmt.Println(err)
	// Output:
	// true
	// guard: bad rule: POST /items/:sku/reserve: keyexpr: tag `key:"item:{path.id}"`: field key at byte 10: template "item:{path.id}": placeholder {path.id} at byte 5: the rule's route has no parameter :id (it has :sku)
}

// ExampleLockRules locks routes from one e.Use middleware, keyed by
// method and route path.
func ExampleLockRules() {
	lk := exampleLocker()
	defer lk.Close()

	rules := lockecho5.Rules{
		"POST /orders/:id/pay": `key:"order:{path.id}" wait:"2s"`,
	}
	e := echo.New()
	e.Use(lockecho5.LockRules(lk, rules)) // e.Use, not e.Pre: it needs the route
	e.POST("/orders/:id/pay", func(c *echo.Context) error {
		return c.String(http.StatusOK, locker.FromContext(c.Request().Context()).Key())
	})
	fmt.Println(rules.Check(e.Router().Routes()))

	w := httptest.NewRecorder()
	e.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/orders/7/pay", nil))
	fmt.Println(w.Code, w.Body)
	// Output:
	// <nil>
	// 200 order:7
}

// ExampleIdempotency replays the first response to a retry with the same
// Idempotency-Key.
func ExampleIdempotency() {
	lk := exampleLocker()
	defer lk.Close()

	charges := 0
	e := echo.New()
	e.POST("/payments", func(c *echo.Context) error {
		charges++
		return c.String(http.StatusCreated, fmt.Sprint("charge ", charges))
	}, lockecho5.Idempotency(lk, guard.WithScope(func(c *echo.Context) (string, error) {
		return c.Request().Header.Get("X-Account"), nil // from your authentication
	})))

	key := fmt.Sprint("example-", time.Now().UnixNano()) // a new key for every run of the example
	for range 2 {
		r := httptest.NewRequest(http.MethodPost, "/payments", nil)
		r.Header.Set("Idempotency-Key", key)
		r.Header.Set("X-Account", "acct-1")
		w := httptest.NewRecorder()
		e.ServeHTTP(w, r)
		fmt.Printf("%d %s replayed=%q\n", w.Code, w.Body, w.Header().Get(lockecho5.ReplayedHeader))
	}
	// Output:
	// 201 charge 1 replayed=""
	// 201 charge 1 replayed="true"
}

// ExampleContextKeys keys a lock by a value an authentication middleware
// stored with c.Set.
func ExampleContextKeys() {
	lk := exampleLocker()
	defer lk.Close()

	e := echo.New()
	e.Use(func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c *echo.Context) error {
			c.Set("user", "u-17") // your authentication
			return next(c)
		}
	})
	e.PUT("/cart", func(c *echo.Context) error {
		return c.String(http.StatusOK, locker.FromContext(c.Request().Context()).Key())
	}, lockecho5.Lock(lk, `key:"cart:{ctx.user}"`, lockecho5.WithSource("ctx", lockecho5.ContextKeys("user"))))

	w := httptest.NewRecorder()
	e.ServeHTTP(w, httptest.NewRequest(http.MethodPut, "/cart", nil))
	fmt.Println(w.Code, w.Body)
	// Output:
	// 200 cart:u-17
}
