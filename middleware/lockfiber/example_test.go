package lockfiber_test

import (
	"errors"
	"fmt"
	"log"
	"strings"

	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/middleware/recover"
	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/locker/redigo"
	"github.com/locktag/locktag/middleware/lockfiber"
)

// newLocker returns a Locker on a Redis at localhost:6379. Building
// handlers does not connect; only requests do.
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

	app := fiber.New()
	app.Use(recover.New()) // a panicking handler's lock is released first
	app.Post("/orders/:id/pay",
		lockfiber.Lock(lk, `key:"order:{path.id}" expire:"30s" wait:"2s"`),
		func(c fiber.Ctx) error {
			lease := locker.FromContext(c.Context())
			// Pass c.Context() to the work the lock protects: it is
			// cancelled if the lock is lost. Give lease.Token() to storage
			// that checks fencing tokens.
			return c.JSON(fiber.Map{"fence": lease.Token()})
		})
	fmt.Println(lockfiber.CheckRoutes(app))

	// A mistake in a tag is found here, at registration, never per request.
	_, err := lockfiber.NewLock(lk, `key:"order:{pth.id}"`)
	fmt.Println(errors.Is(err, keyexpr.ErrUnknownSource))
	// Output:
	// <nil>
	// true
}

// ExampleCheckRoutes finds a tag that names a path parameter its route
// lacks, before the app serves a request.
func ExampleCheckRoutes() {
	lk := newLocker()
	defer lk.Close()

	app := fiber.New()
	app.Post("/orders/:id/pay", lockfiber.Lock(lk, `key:"order:{path.order}"`),
		func(c fiber.Ctx) error { return c.SendStatus(fiber.StatusNoContent) })

	err := lockfiber.CheckRoutes(app)
	fmt.Println(errors.Is(err, lockfiber.ErrBadRule))
	fmt.Println(strings.Contains(err.Error(), "POST /orders/:id/pay"), strings.Contains(err.Error(), "{path.order}"))
	// Output:
	// true
	// true true
}

func ExampleIdempotency() {
	lk := newLocker()
	defer lk.Close()

	accountOf := func(c fiber.Ctx) (string, error) { return c.Get("X-Account"), nil } // your authentication's principal
	app := fiber.New()
	app.Post("/payments/:id",
		lockfiber.Idempotency(lk, guard.WithScope(accountOf)),
		lockfiber.Lock(lk, `key:"payment:{path.id}"`),
		func(c fiber.Ctx) error { return c.Status(fiber.StatusCreated).JSON(fiber.Map{"paid": c.Params("id")}) })

	// Without a scope the guard cannot keep one caller's keys from another's.
	_, err := lockfiber.NewIdempotency(lk)
	fmt.Println(errors.Is(err, guard.ErrNoScope))
	// Output: true
}

// ExampleLocals keys a lock by a value an earlier handler stored with
// c.Locals (here an authenticated user).
func ExampleLocals() {
	lk := newLocker()
	defer lk.Close()

	auth := func(c fiber.Ctx) error {
		c.Locals("user", "ann") // from your authentication
		return c.Next()
	}
	app := fiber.New()
	app.Put("/cart", auth,
		lockfiber.Lock(lk, `key:"cart:{ctx.user}"`, lockfiber.WithSource("ctx", lockfiber.Locals("user"))),
		func(c fiber.Ctx) error { return c.SendStatus(fiber.StatusNoContent) })

	// A key the source does not allow is a registration error.
	_, err := lockfiber.NewLock(lk, `key:"cart:{ctx.usr}"`, lockfiber.WithSource("ctx", lockfiber.Locals("user")))
	fmt.Println(err != nil)
	// Output: true
}

// ExampleOption builds one list of options for the Fiber adapter: the
// guard's, which every adapter accepts, and this package's own.
func ExampleOption() {
	lk := newLocker()
	defer lk.Close()

	opts := []lockfiber.Option{
		guard.WithMaxRequestBytes(64 << 10),
		lockfiber.WithErrorHandler(lockfiber.WriteProblem),
	}
	_, err := lockfiber.NewLock(lk, `key:"order:{path.id}"`, opts...)
	fmt.Println(err)

	_, err = lockfiber.NewLock(lk, `key:"order:{path.id}"`, lockfiber.WithErrorHandler(nil))
	fmt.Println(errors.Is(err, locker.ErrBadOption))
	// Output:
	// <nil>
	// true
}

func ExampleStatus() {
	fmt.Println(lockfiber.Status(guard.Busy), lockfiber.Status(guard.RateLimited), lockfiber.Status(guard.Lost))
	// Output: 409 429 503
}
