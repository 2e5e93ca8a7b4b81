package main

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/middleware"
)

// transferTag is the lock tag of POST /transfers: both accounts, or
// neither. Transfers from a to b and from b to a take the two locks in the
// same order, so they never deadlock; a transfer to the same account takes
// one lock. The keys are the same as a single-account route's
// (`key:"acct:{path.id}"`), so they exclude each other.
const transferTag = `keys:"acct:{body.from},acct:{body.to}" wait:"2s"`

// accounts are the demo's balances in cents, in this process's memory
// (each replica has its own: the demo is about the lock, not the store).
// The mutex only keeps the map itself sound; the read-modify-write of a
// transfer is protected by the lock tag.
type accounts struct {
	mu      sync.Mutex
	balance map[string]int64
	latency time.Duration // between a transfer's read and its write
}

func (a *accounts) get(id string) int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.balance[id]
}

func (a *accounts) set(id string, v int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.balance[id] = v
}

// addTransferRoutes adds POST /transfers and GET /accounts/:id to r.
func addTransferRoutes(r *gin.Engine, lk *locker.Locker, a *accounts) {
	r.GET("/accounts/:id", func(c *gin.Context) {
		c.JSON(http.StatusOK, gin.H{"id": c.Param("id"), "balance_cents": a.get(c.Param("id"))})
	})
	r.POST("/transfers", middleware.Lock(lk, transferTag), transfer(a))
}

// newAccounts returns the demo's two accounts with 100.00 each.
func newAccounts() *accounts {
	return &accounts{balance: map[string]int64{"alice": 10000, "bob": 10000}, latency: 2 * time.Millisecond}
}

// transfer is the handler of POST /transfers.
func transfer(a *accounts) gin.HandlerFunc {
	return func(c *gin.Context) {
		var in struct {
			From        string `json:"from" binding:"required"`
			To          string `json:"to" binding:"required"`
			AmountCents int64  `json:"amount_cents" binding:"required,gt=0"`
		}
		if err := c.ShouldBindJSON(&in); err != nil {
			c.JSON(http.StatusBadRequest, gin.H{"error": "want {\"from\": \"...\", \"to\": \"...\", \"amount_cents\": n > 0}"})
			return
		}
		// A read-modify-write of both balances: safe only under the lock.
		from, to := a.get(in.From), a.get(in.To)
		if from < in.AmountCents {
			c.JSON(http.StatusConflict, gin.H{"error": "insufficient funds"})
			return
		}
		time.Sleep(a.latency) // the store's round trip
		if in.From != in.To {
			a.set(in.From, from-in.AmountCents)
			a.set(in.To, to+in.AmountCents)
		}
		// Each account has its own fencing token (0 without a lock).
		le := locker.FromContext(c.Request.Context())
		c.Header("X-Fencing-Token", strconv.FormatInt(le.TokenOf("acct:"+in.From), 10))
		c.JSON(http.StatusOK, gin.H{"from": in.From, "to": in.To, "amount_cents": in.AmountCents})
	}
}
