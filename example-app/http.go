package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/middleware"
)

// buyTag is the lock tag of POST /items/:id/buy: one purchase of an item at
// a time, across every replica; a buyer waits up to 5s for its turn (in
// arrival order), then gets 409. No expire: watchdog mode, the lease is
// renewed while the handler runs.
const buyTag = `key:"item:{path.id}" wait:"5s"`

// readItemTag and restockTag make the item's read/write lock: reads of
// GET /items/:id run together; a restock (PUT /items/:id/stock) holds the
// item alone, so no read answers from the middle of one. A read waits up to
// 1s for a restock in progress, then gets 409; a restock queued behind
// readers is not overtaken by readers that came after it. The read/write
// lock is apart from buyTag's mutex of the same key: purchases do not wait
// for readers, and a restock takes the purchases' lock itself (Restock).
const (
	readItemTag = `key:"item:{path.id}" mode:"read" wait:"1s"`
	restockTag  = `key:"item:{path.id}" mode:"write" wait:"5s"`
)

// reportTag is a concurrency limit: at most two sales reports at once per
// user (X-User), across every replica — the report is expensive, and one
// user must not take every worker. A third concurrent report gets 429 with
// Retry-After at once (no wait); other users are not affected.
const reportTag = `key:"report:{header.X-User}" limit:"2"`

// reportRateTag is a rate limit on the same route, checked first: at most
// ten reports a minute per user, burst included. The eleventh gets 429 with
// Retry-After and the RateLimit fields, and never queues for a permit.
const reportRateTag = `key:"reports:{header.X-User}" rate:"10/1m"`

// newRouter returns the shop's HTTP API. accessLog, if not nil, gets one line
// per request.
func newRouter(s *shop, accessLog io.Writer) *gin.Engine {
	r := gin.New()
	r.Use(middleware.RouteCheck()) // first: lets middleware.CheckRoutes probe the routes safely
	if accessLog != nil {
		r.Use(gin.LoggerWithConfig(gin.LoggerConfig{Output: accessLog, Skip: middleware.IsProbe}))
	}
	r.Use(gin.Recovery()) // a panicking handler's lock is released before this sees the panic

	r.GET("/items", func(c *gin.Context) { c.JSON(http.StatusOK, s.db.List()) })

	// The lock tag: the handler runs only while this request holds
	// "item:<id>". Busy after 5s: 409 + Retry-After; Redis down: 503.
	r.POST("/items/:id/buy", middleware.Lock(s.lk, buyTag), func(c *gin.Context) {
		ctx := c.Request.Context() // carries the lease; cancelled if the lock is lost
		o, err := s.Buy(ctx, c.Param("id"), c.GetHeader("X-User"))
		if err != nil {
			writeError(c, err)
			return
		}
		c.Header("X-Fencing-Token", strconv.FormatInt(locker.FromContext(ctx).Token(), 10))
		c.JSON(http.StatusOK, o)
	})

	// The same purchase without the tag: the demo's control. Do not do this.
	r.POST("/items/:id/buy-unlocked", func(c *gin.Context) {
		o, err := s.BuyUnlocked(c.Request.Context(), c.Param("id"), c.GetHeader("X-User"))
		if err != nil {
			writeError(c, err)
			return
		}
		c.JSON(http.StatusOK, o)
	})

	// Idempotent payments: a retry with the same Idempotency-Key (from the
	// same X-User) replays the first response instead of charging again.
	r.POST("/payments", middleware.Idempotency(s.records, guard.WithScope(userScope)), func(c *gin.Context) {
		var in struct {
			OrderID     string `json:"order_id" binding:"required"`
			AmountCents int64  `json:"amount_cents" binding:"required,gt=0"`
		}
		if err := c.ShouldBindJSON(&in); err != nil {
			c.JSON(http.StatusBadRequest, gin.H{"error": "want {\"order_id\": \"...\", \"amount_cents\": n > 0}"})
			return
		}
		c.JSON(http.StatusCreated, s.Pay(c.GetHeader("X-User"), in.OrderID, in.AmountCents))
	})
	addTransferRoutes(r, s.lk, newAccounts()) // transfer.go: a multi-key lock

	// Lock kinds need one Redis deployment: a Redlock Locker refuses them
	// when the guard is built, so there the item is read untagged and the
	// restock and the report are not served.
	if s.lk.Supports(locker.Params{Mode: locker.Read}) != nil {
		r.GET("/items/:id", getItem(s))
		return r
	}
	// A read/write lock: item reads share the item's lock with each other
	// and wait only for a restock in progress.
	r.GET("/items/:id", middleware.Lock(s.lk, readItemTag), getItem(s))
	r.PUT("/items/:id/stock", middleware.Lock(s.lk, restockTag), func(c *gin.Context) {
		var in struct {
			Add int64 `json:"add" binding:"required,gt=0"`
		}
		if err := c.ShouldBindJSON(&in); err != nil {
			c.JSON(http.StatusBadRequest, gin.H{"error": "want {\"add\": n > 0}"})
			return
		}
		it, err := s.Restock(c.Request.Context(), c.Param("id"), in.Add)
		if err != nil {
			writeError(c, err)
			return
		}
		c.JSON(http.StatusOK, it)
	})
	// A rate limit, then a concurrency limit: at most ten sales reports a
	// minute and two at once per user.
	r.GET("/reports/sales", middleware.Lock(s.lk, reportRateTag), middleware.Lock(s.lk, reportTag), func(c *gin.Context) {
		rep, err := s.SalesReport(c.Request.Context())
		if err != nil {
			writeError(c, err)
			return
		}
		c.JSON(http.StatusOK, rep)
	})
	return r
}

// getItem answers one item.
func getItem(s *shop) gin.HandlerFunc {
	return func(c *gin.Context) {
		it, err := s.db.Get(c.Param("id"))
		if err != nil {
			writeError(c, err)
			return
		}
		c.JSON(http.StatusOK, it)
	}
}

// userScope is the idempotency scope: who the caller is. This demo trusts an
// X-User header; a real service takes the authenticated principal (or tenant,
// or a hash of the API key) that its authentication middleware stored. An
// empty scope is refused with 401.
func userScope(c *gin.Context) (string, error) {
	return c.GetHeader("X-User"), nil
}

// writeError answers a failed purchase. Lock refusals never get here: the
// middleware answers them with problem+json before the handler runs. The
// body names the outcome, never the underlying error (it may hold the Redis
// address); the error goes to c.Errors for the log.
func writeError(c *gin.Context, err error) {
	_ = c.Error(err)
	status, msg := errorStatus(err)
	c.JSON(status, gin.H{"error": msg})
}

// errorStatus is the status and client message of a failed purchase, for
// the Gin and the net/http routes.
func errorStatus(err error) (int, string) {
	switch {
	case errors.Is(err, errUnknownItem):
		return http.StatusNotFound, "unknown item"
	case errors.Is(err, errSoldOut):
		return http.StatusConflict, "sold out"
	case errors.Is(err, locker.ErrStaleToken), errors.Is(err, locker.ErrLockLost):
		return http.StatusServiceUnavailable, "lock lost; the write was rejected, retry"
	case errors.Is(err, locker.ErrNotObtained):
		return http.StatusConflict, "item busy, retry"
	case errors.Is(err, locker.ErrUnavailable):
		return http.StatusServiceUnavailable, "lock service unavailable"
	case errors.Is(err, errShuttingDown):
		return http.StatusServiceUnavailable, "server shutting down, retry"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, "request ended"
	}
	return http.StatusInternalServerError, "internal error"
}

// writeJSON answers v as JSON with status, for the net/http route.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
