package main

import (
	"context"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/locktag/locktag/example-app/shopv1"
	"github.com/locktag/locktag/locker"
)

// shop.v1.Shop/Buy is locked by its proto option alone: the handler runs
// inside "item:{req.sku}" (its nested Obtain re-enters, holds 2), a call
// waits while another replica holds that lock, and concurrent calls never
// oversell.
func TestGRPCBuyLockedByProtoOption(t *testing.T) {
	srv, lk := realRedis(t)
	s := newShop(lk, newStore(time.Millisecond, map[string]int64{"apple": 10}))
	client := serveGRPC(t, s)
	ctx := testCtx(t)

	resp, err := client.Buy(ctx, &shopv1.BuyRequest{Sku: "apple", User: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetHolds() != 2 || resp.GetFence() <= 0 || resp.GetStockLeft() != 9 {
		t.Fatalf("got %v; want holds 2 (re-entered the interceptor's lock), a fence, 9 left", resp)
	}

	// Another replica holds the item: a call with a short deadline waits
	// for it and ends with DeadlineExceeded, without running the handler.
	held := otherReplicaHolds(t, srv, "apple")
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	_, err = client.Buy(short, &shopv1.BuyRequest{Sku: "apple"})
	cancel()
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("while held elsewhere: %v, want DeadlineExceeded", err)
	}
	if it, _ := s.db.Get("apple"); it.Stock != 9 {
		t.Fatalf("stock %d: the handler ran without the lock", it.Stock)
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// A missing SKU is refused before Redis is touched.
	if _, err := client.Buy(ctx, &shopv1.BuyRequest{}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("empty sku: %v, want InvalidArgument", err)
	}

	// 30 concurrent buyers of the 9 left: exactly 9 succeed.
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		count = map[codes.Code]int{}
	)
	for range 30 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := client.Buy(ctx, &shopv1.BuyRequest{Sku: "apple"})
			mu.Lock()
			count[status.Code(err)]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if count[codes.OK] != 9 || count[codes.FailedPrecondition] != 21 {
		t.Fatalf("outcomes %v; want 9 OK and 21 FailedPrecondition (sold out)", count)
	}
	item, err := client.GetItem(ctx, &shopv1.GetItemRequest{Sku: "apple"})
	if err != nil || item.GetStock() != 0 || item.GetSold() != 10 {
		t.Fatalf("item %v, %v; want stock 0, sold 10", item, err)
	}
}

// The HTTP route and the gRPC method take the same lock for the same item.
func TestHTTPAndGRPCShareTheItemLock(t *testing.T) {
	_, lk := realRedis(t)
	s := newShop(lk, newStore(0, map[string]int64{"pear": 5}))
	client := serveGRPC(t, s)
	r := newRouter(s, nil)
	ctx := testCtx(t)

	// Hold the HTTP route's lock name by hand, as another replica would.
	held, err := lk.Obtain(ctx, itemLock("pear"), locker.Params{})
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := client.Buy(short, &shopv1.BuyRequest{Sku: "pear"}); status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("gRPC while item:pear is held: %v, want DeadlineExceeded", err)
	}
	_ = held.Release(ctx)
	if rec := post(r, "/items/pear/buy", ""); rec.Code != 200 {
		t.Fatalf("HTTP after release: %d %s", rec.Code, rec.Body)
	}
	resp, err := client.Buy(ctx, &shopv1.BuyRequest{Sku: "pear"})
	if err != nil || resp.GetStockLeft() != 3 {
		t.Fatalf("gRPC after HTTP: %v %v, want 3 left", resp, err)
	}
}
