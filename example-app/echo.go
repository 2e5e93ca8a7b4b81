package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	echomw "github.com/labstack/echo/v4/middleware"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/middleware"
	"github.com/locktag/locktag/middleware/lockecho"
)

// The routers -router chooses between for the shop's HTTP API.
const (
	routerGin  = "gin"
	routerEcho = "echo"
)

// apiRouter returns the shop's HTTP API on the router named by -router,
// with every lock tag checked against its route before traffic.
func apiRouter(s *shop, accessLog io.Writer, name string) (http.Handler, error) {
	switch name {
	case routerGin, "":
		r := newRouter(s, accessLog)
		// Every lock tag must be resolvable on its route (a {path.X} the route
		// lacks would otherwise answer 500 to every request).
		if err := middleware.CheckRoutes(r); err != nil {
			return nil, fmt.Errorf("lock tags: %w", err)
		}
		return r, nil
	case routerEcho:
		return newEchoRouter(s, accessLog)
	}
	return nil, fmt.Errorf("-router %q: want %s or %s", name, routerGin, routerEcho)
}

// newEchoRouter returns the shop's HTTP API on Echo: newRouter's routes,
// under the same tags, so a purchase through either router takes the same
// lock. accessLog, if not nil, gets one line per request.
func newEchoRouter(s *shop, accessLog io.Writer) (*echo.Echo, error) {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	// Each route's lock tags are checked as it is added: a tag naming a
	// path parameter its route lacks panics at e.POST, before traffic.
	if err := lockecho.CheckRoutes(e); err != nil {
		return nil, fmt.Errorf("lock tags: %w", err)
	}
	if accessLog != nil {
		e.Use(echomw.RequestLoggerWithConfig(echomw.RequestLoggerConfig{
			LogMethod: true, LogURI: true, LogStatus: true, LogLatency: true, LogError: true,
			LogValuesFunc: func(_ echo.Context, v echomw.RequestLoggerValues) error {
				line := fmt.Sprintf("[echo] %s %s %d %v", v.Method, v.URI, v.Status, v.Latency.Round(time.Microsecond))
				if v.Error != nil {
					line += " error: " + v.Error.Error()
				}
				_, err := fmt.Fprintln(accessLog, line)
				return err
			},
		}))
	}
	e.Use(echomw.Recover()) // a panicking handler's lock is released before this sees the panic

	e.GET("/items", func(c echo.Context) error { return c.JSON(http.StatusOK, s.db.List()) })

	// The lock tag: the handler runs only while this request holds
	// "item:<id>" — the Gin route's lock.
	e.POST("/items/:id/buy", func(c echo.Context) error {
		ctx := c.Request().Context() // carries the lease; cancelled if the lock is lost
		o, err := s.Buy(ctx, c.Param("id"), c.Request().Header.Get("X-User"))
		if err != nil {
			return echoError(err)
		}
		c.Response().Header().Set("X-Fencing-Token", strconv.FormatInt(locker.FromContext(ctx).Token(), 10))
		return c.JSON(http.StatusOK, o)
	}, lockecho.Lock(s.lk, buyTag))

	// The same purchase without the tag: the demo's control. Do not do this.
	e.POST("/items/:id/buy-unlocked", func(c echo.Context) error {
		o, err := s.BuyUnlocked(c.Request().Context(), c.Param("id"), c.Request().Header.Get("X-User"))
		if err != nil {
			return echoError(err)
		}
		return c.JSON(http.StatusOK, o)
	})

	// Idempotent payments, scoped by X-User.
	e.POST("/payments", func(c echo.Context) error {
		var in struct {
			OrderID     string `json:"order_id"`
			AmountCents int64  `json:"amount_cents"`
		}
		if err := json.NewDecoder(c.Request().Body).Decode(&in); err != nil || in.OrderID == "" || in.AmountCents <= 0 {
			return c.JSON(http.StatusBadRequest, map[string]string{"error": "want {\"order_id\": \"...\", \"amount_cents\": n > 0}"})
		}
		return c.JSON(http.StatusCreated, s.Pay(c.Request().Header.Get("X-User"), in.OrderID, in.AmountCents))
	}, lockecho.Idempotency(s.records, guard.WithScope(func(c echo.Context) (string, error) {
		return c.Request().Header.Get("X-User"), nil // the demo trusts a header; see userScope
	})))

	// A multi-key lock: both accounts, or neither.
	a := newAccounts()
	e.GET("/accounts/:id", func(c echo.Context) error {
		return c.JSON(http.StatusOK, map[string]any{"id": c.Param("id"), "balance_cents": a.get(c.Param("id"))})
	})
	e.POST("/transfers", echoTransfer(a), lockecho.Lock(s.lk, transferTag))

	// Lock kinds need one Redis deployment (see newRouter).
	if s.lk.Supports(locker.Params{Mode: locker.Read}) != nil {
		e.GET("/items/:id", echoGetItem(s))
	} else {
		e.GET("/items/:id", echoGetItem(s), lockecho.Lock(s.lk, readItemTag))
		e.PUT("/items/:id/stock", func(c echo.Context) error {
			var in struct {
				Add int64 `json:"add"`
			}
			if err := json.NewDecoder(c.Request().Body).Decode(&in); err != nil || in.Add <= 0 {
				return c.JSON(http.StatusBadRequest, map[string]string{"error": "want {\"add\": n > 0}"})
			}
			it, err := s.Restock(c.Request().Context(), c.Param("id"), in.Add)
			if err != nil {
				return echoError(err)
			}
			return c.JSON(http.StatusOK, it)
		}, lockecho.Lock(s.lk, restockTag))
		// A rate limit, then a concurrency limit, in the order given.
		e.GET("/reports/sales", func(c echo.Context) error {
			rep, err := s.SalesReport(c.Request().Context())
			if err != nil {
				return echoError(err)
			}
			return c.JSON(http.StatusOK, rep)
		}, lockecho.Lock(s.lk, reportRateTag), lockecho.Lock(s.lk, reportTag))
	}
	return e, nil
}

// echoGetItem answers one item.
func echoGetItem(s *shop) echo.HandlerFunc {
	return func(c echo.Context) error {
		it, err := s.db.Get(c.Param("id"))
		if err != nil {
			return echoError(err)
		}
		return c.JSON(http.StatusOK, it)
	}
}

// echoTransfer is transfer (transfer.go) for Echo.
func echoTransfer(a *accounts) echo.HandlerFunc {
	return func(c echo.Context) error {
		var in struct {
			From        string `json:"from"`
			To          string `json:"to"`
			AmountCents int64  `json:"amount_cents"`
		}
		if err := json.NewDecoder(c.Request().Body).Decode(&in); err != nil || in.From == "" || in.To == "" || in.AmountCents <= 0 {
			return c.JSON(http.StatusBadRequest, map[string]string{"error": "want {\"from\": \"...\", \"to\": \"...\", \"amount_cents\": n > 0}"})
		}
		from, to := a.get(in.From), a.get(in.To)
		if from < in.AmountCents {
			return c.JSON(http.StatusConflict, map[string]string{"error": "insufficient funds"})
		}
		time.Sleep(a.latency) // the store's round trip
		if in.From != in.To {
			a.set(in.From, from-in.AmountCents)
			a.set(in.To, to+in.AmountCents)
		}
		le := locker.FromContext(c.Request().Context())
		c.Response().Header().Set("X-Fencing-Token", strconv.FormatInt(le.TokenOf("acct:"+in.From), 10))
		return c.JSON(http.StatusOK, map[string]any{"from": in.From, "to": in.To, "amount_cents": in.AmountCents})
	}
}

// echoError answers a failed purchase as writeError does: the status and
// message of errorStatus, the error itself kept for the access log. The
// lock middleware has Echo's error handler write it while the lock is
// still held.
func echoError(err error) error {
	status, msg := errorStatus(err)
	return &echo.HTTPError{Code: status, Message: map[string]string{"error": msg}, Internal: err}
}
