package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/locktag/locktag/locker"
)

// Errors of the shop's storage and purchase logic.
var (
	// errSoldOut: the item has no stock left.
	errSoldOut = errors.New("sold out")
	// errUnknownItem: no item has this SKU.
	errUnknownItem = errors.New("unknown item")
)

// item is one row of the stock table.
type item struct {
	SKU   string `json:"sku"`
	Stock int64  `json:"stock"`
	Sold  int64  `json:"sold"`
}

// store is the shop's storage: a stock table kept in memory, standing in for
// a database. A sale is a read-modify-write (read the stock, take one, write
// it back), and both its steps carry the lock's fencing token through a
// locker.Fence: Claim records the token on the row before reading it, and
// Put writes only if that claim still stands. So a holder that lost its lock
// (its lease ran out while it was paused between its read and its write)
// cannot write back a stock that a newer holder has also read — which
// fencing the write alone would allow. In SQL, with a fence column that
// starts at 0:
//
//	UPDATE items SET fence = $2 WHERE sku = $1 AND fence <= $2 RETURNING stock, sold  -- Claim
//	UPDATE items SET stock = $3, sold = $4 WHERE sku = $1 AND fence = $2              -- Put
//
// and zero rows from either means the token is stale. The store itself is
// safe for concurrent use, but its read-modify-write cycle (Claim, then Put)
// is not atomic: that is the race the locks prevent.
type store struct {
	mu    sync.Mutex
	items map[string]*item
	fence locker.Fence
	// latency is how long a write takes: the gap between reading the stock
	// and writing it back, in which an unlocked purchase races.
	latency time.Duration
}

// newStore returns a store with the given items in stock.
func newStore(latency time.Duration, stock map[string]int64) *store {
	s := &store{items: map[string]*item{}, latency: latency}
	for sku, n := range stock {
		s.items[sku] = &item{SKU: sku, Stock: n}
	}
	return s
}

// Get returns a copy of the item, unfenced: for display. The input of a
// write comes from Claim.
func (s *store) Get(sku string) (item, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it, ok := s.items[sku]
	if !ok {
		return item{}, errUnknownItem
	}
	return *it, nil
}

// Claim records token on the item's row and returns a copy of the item: the
// read of a read-modify-write. A token older than one that claimed the row
// before gets locker.ErrStaleToken and reads nothing. Token 0 (no lock at
// all) reads without a claim: the demo's unlocked route.
func (s *store) Claim(sku string, token int64) (item, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it, ok := s.items[sku]
	if !ok {
		return item{}, errUnknownItem
	}
	if token != 0 {
		if err := s.fence.Claim(sku, token); err != nil {
			return item{}, fmt.Errorf("read of %s refused: %w", sku, err)
		}
	}
	return *it, nil
}

// List returns every item, sorted by SKU.
func (s *store) List() []item {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]item, 0, len(s.items))
	for _, it := range s.items {
		out = append(out, *it)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].SKU < out[j].SKU })
	return out
}

// Put writes the item's new stock and sold count after the store's write
// latency, if token's Claim on the SKU still stands; otherwise it changes
// nothing and returns locker.ErrStaleToken (a newer holder claimed the row)
// or locker.ErrNotClaimed (the caller skipped Claim). Token 0 (no lock at
// all) skips the check: that is the unprotected write the demo's unlocked
// route makes.
func (s *store) Put(ctx context.Context, it item, token int64) error {
	if err := s.pause(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if token != 0 {
		if err := s.fence.Check(it.SKU, token); err != nil {
			return fmt.Errorf("write of %s refused: %w", it.SKU, err)
		}
	}
	cp := it
	s.items[it.SKU] = &cp
	return nil
}

// Set resets an item's stock and sold count, unfenced (the demo's reset).
func (s *store) Set(sku string, stock int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.items[sku] = &item{SKU: sku, Stock: stock}
}

// pause waits for the write latency, or until ctx ends: a handler whose lock
// is lost stops here instead of writing.
func (s *store) pause(ctx context.Context) error {
	if s.latency <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(s.latency)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
