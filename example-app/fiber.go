package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/middleware/logger"
	"github.com/gofiber/fiber/v3/middleware/recover"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/middleware/lockfiber"
)

// newFiberApp returns the shop's HTTP API on Fiber (-fiber ADDR): the Gin
// routes of newRouter with the same tags, on their own port, since Fiber
// runs on fasthttp rather than net/http. Each lock is a route-level
// handler: a Fiber app.Use handler cannot see the route's parameters.
// The route handlers copy what they keep from the request (strings.Clone):
// fasthttp reuses a request's buffers for the next one.
func newFiberApp(s *shop, accessLog io.Writer) (*fiber.App, error) {
	app := fiber.New()
	if accessLog != nil {
		app.Use(logger.New(logger.Config{Stream: accessLog}))
	}
	app.Use(recover.New()) // a panicking handler's lock is released before this sees the panic

	app.Get("/items", func(c fiber.Ctx) error { return c.JSON(s.db.List()) })
	app.Post("/items/:id/buy", lockfiber.Lock(s.lk, buyTag), func(c fiber.Ctx) error {
		ctx := c.Context() // carries the lease; cancelled if the lock is lost
		o, err := s.Buy(ctx, strings.Clone(c.Params("id")), strings.Clone(c.Get("X-User")))
		if err != nil {
			return fiberError(c, err)
		}
		c.Set("X-Fencing-Token", strconv.FormatInt(locker.FromContext(ctx).Token(), 10))
		return c.JSON(o)
	})
	app.Post("/items/:id/buy-unlocked", func(c fiber.Ctx) error { // the demo's control
		o, err := s.BuyUnlocked(c.Context(), strings.Clone(c.Params("id")), strings.Clone(c.Get("X-User")))
		if err != nil {
			return fiberError(c, err)
		}
		return c.JSON(o)
	})
	app.Post("/payments", lockfiber.Idempotency(s.records, guard.WithScope(func(c fiber.Ctx) (string, error) {
		return c.Get("X-User"), nil // the scope is hashed at once; no copy needed
	})), func(c fiber.Ctx) error {
		var in struct {
			OrderID     string `json:"order_id"`
			AmountCents int64  `json:"amount_cents"`
		}
		if err := c.Bind().JSON(&in); err != nil || in.OrderID == "" || in.AmountCents <= 0 {
			return c.Status(fiber.StatusBadRequest).JSON(fiber.Map{"error": "want {\"order_id\": \"...\", \"amount_cents\": n > 0}"})
		}
		return c.Status(fiber.StatusCreated).JSON(s.Pay(strings.Clone(c.Get("X-User")), in.OrderID, in.AmountCents))
	})
	getItem := func(c fiber.Ctx) error {
		it, err := s.db.Get(strings.Clone(c.Params("id")))
		if err != nil {
			return fiberError(c, err)
		}
		return c.JSON(it)
	}
	if s.lk.Supports(locker.Params{Mode: locker.Read}) != nil { // Redlock: as newRouter
		app.Get("/items/:id", getItem)
	} else {
		app.Get("/items/:id", lockfiber.Lock(s.lk, readItemTag), getItem)
		app.Put("/items/:id/stock", lockfiber.Lock(s.lk, restockTag), func(c fiber.Ctx) error {
			var in struct {
				Add int64 `json:"add"`
			}
			if err := c.Bind().JSON(&in); err != nil || in.Add <= 0 {
				return c.Status(fiber.StatusBadRequest).JSON(fiber.Map{"error": "want {\"add\": n > 0}"})
			}
			it, err := s.Restock(c.Context(), strings.Clone(c.Params("id")), in.Add)
			if err != nil {
				return fiberError(c, err)
			}
			return c.JSON(it)
		})
		app.Get("/reports/sales", lockfiber.Lock(s.lk, reportRateTag), lockfiber.Lock(s.lk, reportTag), func(c fiber.Ctx) error {
			rep, err := s.SalesReport(c.Context())
			if err != nil {
				return fiberError(c, err)
			}
			return c.JSON(rep)
		})
	}
	if err := lockfiber.CheckRoutes(app); err != nil { // every {path.X} names a parameter of its route
		return nil, err
	}
	return app, nil
}

// fiberError answers a failed purchase as writeError does for Gin.
func fiberError(c fiber.Ctx, err error) error {
	status, msg := errorStatus(err)
	return c.Status(status).JSON(fiber.Map{"error": msg})
}

// startFiber serves the shop on Fiber at addr (-fiber), unless addr is
// empty, and tells out where. stop drains it: requests in flight get up
// to grace to finish; it returns the server's error, if it failed.
func startFiber(addr string, s *shop, accessLog, out io.Writer) (stop func(grace time.Duration) error, err error) {
	if addr == "" {
		return func(time.Duration) error { return nil }, nil
	}
	app, err := newFiberApp(s, accessLog)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("fiber: %w (choose another address with -fiber)", err)
	}
	fmt.Fprintf(out, "  fiber:    http://%s (the shop's HTTP routes on Fiber)\n", ln.Addr())
	done := make(chan error, 1)
	go func() { done <- app.Listener(ln, fiber.ListenConfig{DisableStartupMessage: true}) }()
	return func(grace time.Duration) error {
		ctx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		return errors.Join(app.ShutdownWithContext(ctx), <-done)
	}, nil
}
