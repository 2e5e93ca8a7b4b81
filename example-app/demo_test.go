package main

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/redigo"
)

// The demo's claim, on a real redis-server: the route with the lock tag never
// oversells, and the same purchase without it does (the control run that
// shows the count would catch a broken lock).
func TestDemoOversellsOnlyWithoutTheTag(t *testing.T) {
	_, lk := realRedis(t)
	const buyers, stock = 120, 20
	var out strings.Builder
	res, err := runDemo(testCtx(t), lk, &out, demoConfig{Buyers: buyers, Stock: stock, Latency: 10 * time.Millisecond})
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 {
		t.Fatalf("%d rounds, want 2", len(res))
	}
	unlocked, locked := res[0], res[1]
	if unlocked.Oversold(stock) == 0 {
		t.Errorf("without the lock: oversold 0 (confirmed %d of %d in stock); the race did not happen", unlocked.Confirmed, stock)
	}
	if got := locked.Oversold(stock); got != 0 {
		t.Errorf("with the lock tag: oversold %d, want 0", got)
	}
	if locked.Confirmed != stock || locked.SoldOut != buyers-stock || locked.Other != 0 || locked.StockLeft != 0 {
		t.Errorf("with the lock tag: %+v; want %d confirmed, %d sold out, 0 left", locked, stock, buyers-stock)
	}
}

// The locked route's purchases each carry a larger fencing token, and the
// handler's nested Obtain re-entered the tag's lock.
func TestBuyRouteFencesAndReenters(t *testing.T) {
	_, lk := realRedis(t)
	s := newShop(lk, newStore(0, map[string]int64{"pear": 5}))
	r := newRouter(s, nil)
	var last int64
	for range 3 {
		rec := post(r, "/items/pear/buy", "", "X-User", "alice")
		if rec.Code != http.StatusOK {
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
		o := decode[order](t, rec.Body.String())
		if o.Holds != 2 {
			t.Errorf("holds %d, want 2 (the nested lock re-enters the tag's)", o.Holds)
		}
		if o.Fence <= last {
			t.Errorf("fence %d after %d: not increasing", o.Fence, last)
		}
		if h := rec.Header().Get("X-Fencing-Token"); h != strconv.FormatInt(o.Fence, 10) {
			t.Errorf("X-Fencing-Token %q, body fence %d", h, o.Fence)
		}
		last = o.Fence
	}
	if rec := post(r, "/items/nope/buy", ""); rec.Code != http.StatusNotFound {
		t.Errorf("unknown item: %d, want 404", rec.Code)
	}
}

// While another replica holds an item's lock, buyers of that item wait (the
// tag's wait is 5s) and none of them runs; when it releases, they all
// complete, one at a time.
func TestBuyRouteWaitsForAnotherHolder(t *testing.T) {
	srv, lk := realRedis(t)
	replica, err := locker.New(redigo.New(srv.Pool(t)))
	if err != nil {
		t.Fatal(err)
	} // another process on the same Redis
	t.Cleanup(func() { _ = replica.Close() })
	s := newShop(lk, newStore(0, map[string]int64{"plum": 10}))
	r := newRouter(s, nil)
	ctx := testCtx(t)
	held, err := replica.Obtain(ctx, itemLock("plum"), locker.Params{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	codes := make(chan int, 3)
	for range 3 {
		wg.Add(1)
		go func() { defer wg.Done(); codes <- post(r, "/items/plum/buy", "").Code }()
	}
	eventually(t, 5*time.Second, "three buyers queued", func() bool { return queued(t, srv, "plum") == 3 })
	select {
	case c := <-codes:
		t.Fatalf("a buyer finished (%d) while another holder had the lock", c)
	default:
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != http.StatusOK {
			t.Errorf("status %d after the holder released, want 200", c)
		}
	}
	it, _ := s.db.Get("plum")
	if it.Stock != 7 || it.Sold != 3 {
		t.Errorf("stock %d sold %d, want 7 and 3", it.Stock, it.Sold)
	}
}

// queued returns how many callers wait in Redis for the item's lock: the
// length of the locker's waiter queue, "<prefix>{<name>}:q" (docs/keys.md).
func queued(t *testing.T, srv *redistest.Server, sku string) int64 {
	t.Helper()
	n, err := srv.Do("ZCARD", "locktag:{"+itemLock(sku)+"}:q")
	if err != nil {
		t.Fatal(err)
	}
	return n.(int64)
}

// decode unmarshals a JSON body.
func decode[T any](t *testing.T, body string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("%v in %s", err, body)
	}
	return v
}
