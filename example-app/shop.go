package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locktag/locktag/locker"
)

// itemLock is the lock name of an item. The HTTP tag `key:"item:{path.id}"`
// and the proto option `key: "item:{req.sku}"` resolve to the same name for
// the shop's SKUs (lower-case letters, digits and '-', which keyexpr does not
// escape), so a purchase over HTTP and one over gRPC exclude each other, and
// business code can take the same lock by hand.
func itemLock(sku string) string { return "item:" + sku }

// order is a confirmed purchase.
type order struct {
	ID        string `json:"order_id"`
	SKU       string `json:"sku"`
	User      string `json:"user"`
	StockLeft int64  `json:"stock_left"`
	// Fence is the fencing token the stock read and write carried (0: unlocked).
	Fence int64 `json:"fence"`
	// Holds is the hold count the purchase's nested lock reached: 2 when it
	// re-entered the lock a tag or proto option took for the request.
	Holds int `json:"holds"`
}

// payment is a charge made by POST /payments.
type payment struct {
	ID          string `json:"payment_id"`
	User        string `json:"user"`
	OrderID     string `json:"order_id"`
	AmountCents int64  `json:"amount_cents"`
}

// shop is the business logic shared by the HTTP and gRPC front ends.
type shop struct {
	lk      *locker.Locker
	records *locker.Locker // idempotency records: lk unless the backend says otherwise
	db      *store

	orders atomic.Int64 // order ids

	mu       sync.Mutex
	payments []payment // every charge made, in order
}

// newShop returns a shop selling from db, locking with lk.
func newShop(lk *locker.Locker, db *store) *shop {
	return &shop{lk: lk, records: lk, db: db}
}

// Buy sells one unit of sku to user under the item's lock.
//
// It takes the lock itself, by hand: called from a handler whose tag or proto
// option already holds "item:<sku>", the context carries that lease and this
// Obtain re-enters it (the hold count goes to 2, nothing waits); called from
// anywhere else — a job, a CLI, a test — it takes the lock for real. Either
// way the stock's read and write carry the lease's fencing token.
func (s *shop) Buy(ctx context.Context, sku, user string) (order, error) {
	if _, err := s.db.Get(sku); err != nil {
		return order{}, err
	}
	lease, err := s.lk.Obtain(ctx, itemLock(sku), locker.Params{Wait: 5 * time.Second, Name: "shop.buy.nested"})
	if err != nil {
		return order{}, err
	}
	// Release ignores ctx's cancellation: a cancelled request still
	// releases its hold.
	defer func() { _ = lease.Release(ctx) }()
	ctx = lease.Context() // cancelled with cause locker.ErrLockLost if the lock is lost

	it, err := s.sell(ctx, sku, lease.Token())
	if err != nil {
		return order{}, err
	}
	return s.confirm(it, user, lease.Token(), lease.Holds()), nil
}

// BuyUnlocked is Buy without any lock: read the stock, take the store's
// write latency, write it back. Concurrent calls read the same stock and sell
// it more than once. Only the demo's control route uses it.
func (s *shop) BuyUnlocked(ctx context.Context, sku, user string) (order, error) {
	it, err := s.sell(ctx, sku, 0)
	if err != nil {
		return order{}, err
	}
	return s.confirm(it, user, 0, 0), nil
}

// sell is the read-modify-write of one sale: claim and read the stock,
// take one, write it back, both steps fenced with fence (0: unfenced). Safe
// only under the item's lock.
func (s *shop) sell(ctx context.Context, sku string, fence int64) (item, error) {
	it, err := s.db.Claim(sku, fence)
	if err != nil {
		return item{}, err
	}
	if it.Stock <= 0 {
		return item{}, errSoldOut
	}
	it.Stock--
	it.Sold++
	if err := s.db.Put(ctx, it, fence); err != nil {
		return item{}, err
	}
	return it, nil
}

func (s *shop) confirm(it item, user string, fence int64, holds int) order {
	if user == "" {
		user = "anonymous"
	}
	return order{
		ID:        fmt.Sprintf("ord_%d", s.orders.Add(1)),
		SKU:       it.SKU,
		User:      user,
		StockLeft: it.Stock,
		Fence:     fence,
		Holds:     holds,
	}
}

// Restock adds n units to sku's stock. PUT /items/:id/stock calls it under
// the item's write lock (restockTag), which keeps readers out; the stock
// itself is also changed by purchases, under the item's mutex, so Restock
// takes that lock too, by hand, and its read and write carry that lease's
// fencing token as a purchase's do.
func (s *shop) Restock(ctx context.Context, sku string, n int64) (item, error) {
	if _, err := s.db.Get(sku); err != nil {
		return item{}, err
	}
	lease, err := s.lk.Obtain(ctx, itemLock(sku), locker.Params{Wait: 5 * time.Second, Name: "shop.restock"})
	if err != nil {
		return item{}, err
	}
	defer func() { _ = lease.Release(ctx) }()
	ctx = lease.Context()
	it, err := s.db.Claim(sku, lease.Token())
	if err != nil {
		return item{}, err
	}
	it.Stock += n
	if err := s.db.Put(ctx, it, lease.Token()); err != nil {
		return item{}, err
	}
	return it, nil
}

// salesReport is the answer of GET /reports/sales.
type salesReport struct {
	Items []item `json:"items"`
	Sold  int64  `json:"sold"`
	Stock int64  `json:"stock"`
}

// SalesReport sums the sales of every item. It stands for an expensive
// query (it takes the store's latency), which is why GET /reports/sales
// limits how many run at once per user (reportTag).
func (s *shop) SalesReport(ctx context.Context) (salesReport, error) {
	if err := s.db.pause(ctx); err != nil {
		return salesReport{}, err
	}
	r := salesReport{Items: s.db.List()}
	for _, it := range r.Items {
		r.Sold += it.Sold
		r.Stock += it.Stock
	}
	return r, nil
}

// Pay charges user. It is not idempotent by itself: every call charges.
// POST /payments puts the idempotency guard in front of it.
func (s *shop) Pay(user, orderID string, cents int64) payment {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := payment{
		ID:          fmt.Sprintf("pay_%d", len(s.payments)+1),
		User:        user,
		OrderID:     orderID,
		AmountCents: cents,
	}
	s.payments = append(s.payments, p)
	return p
}

// Charges returns how many charges were made.
func (s *shop) Charges() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.payments)
}
