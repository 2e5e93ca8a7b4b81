package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/locktag/locktag/example-app/shopv1"
	"github.com/locktag/locktag/example-app/shopv1/shopv1connect"
)

// serveHTTP serves everything the HTTP port serves until the test ends.
func serveHTTP(t *testing.T, s *shop) *httptest.Server {
	t.Helper()
	h, err := newHTTPHandler(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// The Shop service over connect-go takes Buy's lock from the proto option,
// as the gRPC server does: the handler re-enters it (holds 2), a call waits
// while another replica holds the item, a missing SKU is InvalidArgument.
func TestConnectBuyLockedByProtoOption(t *testing.T) {
	srv, lk := realRedis(t)
	s := newShop(lk, newStore(time.Millisecond, map[string]int64{"apple": 10}))
	hs := serveHTTP(t, s)
	client := shopv1connect.NewShopClient(hs.Client(), hs.URL)
	ctx := testCtx(t)

	resp, err := client.Buy(ctx, connect.NewRequest(&shopv1.BuyRequest{Sku: "apple", User: "carol"}))
	if err != nil {
		t.Fatal(err)
	}
	if m := resp.Msg; m.GetHolds() != 2 || m.GetFence() <= 0 || m.GetStockLeft() != 9 {
		t.Fatalf("got %v; want holds 2, a fence, 9 left", m)
	}

	held := otherReplicaHolds(t, srv, "apple")
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	_, err = client.Buy(short, connect.NewRequest(&shopv1.BuyRequest{Sku: "apple"}))
	cancel()
	if connect.CodeOf(err) != connect.CodeDeadlineExceeded {
		t.Fatalf("while held elsewhere: %v, want deadline_exceeded", err)
	}
	if it, _ := s.db.Get("apple"); it.Stock != 9 {
		t.Fatalf("stock %d: the handler ran without the lock", it.Stock)
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Buy(ctx, connect.NewRequest(&shopv1.BuyRequest{})); connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Fatalf("no sku: %v, want invalid_argument", err)
	}
	item, err := client.GetItem(ctx, connect.NewRequest(&shopv1.GetItemRequest{Sku: "apple"}))
	if err != nil || item.Msg.GetStock() != 9 {
		t.Fatalf("GetItem: %v %v", item, err)
	}
}

// The net/http route holds the same lock as the Gin route, the gRPC and
// the connect Buy: buying through all four at once never oversells.
func TestStdHTTPBuySharesTheItemLock(t *testing.T) {
	_, lk := realRedis(t)
	s := newShop(lk, newStore(time.Millisecond, map[string]int64{"plum": 8}))
	hs := serveHTTP(t, s)
	rpc := serveGRPC(t, s)
	cc := shopv1connect.NewShopClient(hs.Client(), hs.URL)
	ctx := testCtx(t)

	resp, err := hs.Client().Post(hs.URL+"/std/items/plum/buy", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	body := readBody(t, resp)
	if o := decode[order](t, body); resp.StatusCode != http.StatusOK || o.Holds != 2 || o.Fence <= 0 || resp.Header.Get("X-Fencing-Token") == "" {
		t.Fatalf("net/http buy: %d %s", resp.StatusCode, body)
	}
	if resp, err := hs.Client().Post(hs.URL+"/std/items/"+strings.Repeat("x", 300)+"/buy", "", nil); err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("over-long id: %v %v, want 400", resp, err)
	} else {
		_ = readBody(t, resp)
	}

	var wg sync.WaitGroup
	for i := range 12 { // 7 left: 5 must be sold out, none oversold
		wg.Go(func() {
			switch i % 4 {
			case 0:
				if r, err := hs.Client().Post(hs.URL+"/std/items/plum/buy", "", nil); err == nil {
					_ = readBody(t, r)
				}
			case 1:
				if r, err := hs.Client().Post(hs.URL+"/items/plum/buy", "", nil); err == nil {
					_ = readBody(t, r)
				}
			case 2:
				_, _ = rpc.Buy(ctx, &shopv1.BuyRequest{Sku: "plum"})
			case 3:
				_, _ = cc.Buy(ctx, connect.NewRequest(&shopv1.BuyRequest{Sku: "plum"}))
			}
		})
	}
	wg.Wait()
	if it, _ := s.db.Get("plum"); it.Stock != 0 || it.Sold != 8 {
		t.Fatalf("stock %d, sold %d: want 0 and 8", it.Stock, it.Sold)
	}
}
