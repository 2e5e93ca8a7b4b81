package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
)

// waitingBuy sends POST /items/<sku>/buy through h while another replica
// holds the item's lock, shows that the purchase waits for it in the lock's
// queue and is answered only after the release, and returns the answer and
// the other replica's fencing token.
func waitingBuy(t *testing.T, srv *redistest.Server, sku string, send func() (int, http.Header, string)) (code int, hdr http.Header, body string, heldToken int64) {
	t.Helper()
	held := otherReplicaHolds(t, srv, sku)
	type answer struct {
		code int
		hdr  http.Header
		body string
	}
	answered := make(chan answer, 1)
	go func() {
		c, h, b := send()
		answered <- answer{c, h, b}
	}()
	eventually(t, 5*time.Second, "the purchase queued for the item's lock", func() bool {
		n, _ := srv.Do("ZCARD", "locktag:{item:"+sku+"}:q")
		return n == int64(1)
	})
	select {
	case a := <-answered:
		t.Fatalf("the purchase answered %d %s while another replica held the item", a.code, a.body)
	default:
	}
	if err := held.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	a := testwait.Recv(t, answered, "the purchase's answer")
	return a.code, a.hdr, a.body, held.Token()
}

// TestEchoRouter: the shop's API on Echo passes its start-up route check,
// and a purchase there takes the item's lock — the same lock as the Gin
// route's: it waits while another replica holds the item, then runs with
// a newer fencing token.
func TestEchoRouter(t *testing.T) {
	srv, lk := realRedis(t)
	s := newShop(lk, newStore(0, map[string]int64{"apple": 3}))
	h, err := newHTTPHandlerOn(s, nil, routerEcho)
	if err != nil {
		t.Fatal(err)
	}
	code, hdr, body, heldToken := waitingBuy(t, srv, "apple", func() (int, http.Header, string) {
		rec := post(h, "/items/apple/buy", "", "X-User", "alice")
		return rec.Code, rec.Header(), rec.Body.String()
	})
	token, _ := strconv.ParseInt(hdr.Get("X-Fencing-Token"), 10, 64)
	if code != http.StatusOK || token <= heldToken {
		t.Fatalf("purchase after the release: %d %s, fencing token %d (the other replica's %d)", code, body, token, heldToken)
	}

	// A multi-key transfer and an idempotent payment, as on Gin.
	rec := post(h, "/transfers", `{"from":"alice","to":"bob","amount_cents":500}`, "Content-Type", "application/json")
	if rec.Code != http.StatusOK || rec.Header().Get("X-Fencing-Token") == "0" {
		t.Fatalf("transfer: %d %s", rec.Code, rec.Body)
	}
	pay := func() *httptest.ResponseRecorder {
		return post(h, "/payments", `{"order_id":"ord_1","amount_cents":1999}`, "X-User", "alice", "Idempotency-Key", `"pay-echo-1"`)
	}
	first, second := pay(), pay()
	if first.Code != http.StatusCreated || second.Code != http.StatusCreated || second.Body.String() != first.Body.String() || second.Header().Get("Idempotent-Replayed") != "true" {
		t.Fatalf("payment %d %s, retry %d %s (replayed %q)", first.Code, first.Body, second.Code, second.Body, second.Header().Get("Idempotent-Replayed"))
	}
	// A handler's error answer keeps the Gin route's body.
	if rec := post(h, "/items/durian/buy", "", "X-User", "alice"); rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), "unknown item") {
		t.Fatalf("unknown item: %d %s", rec.Code, rec.Body)
	}
	if _, err := newHTTPHandlerOn(s, nil, "chi"); err == nil {
		t.Fatal("-router chi was accepted")
	}
}

// TestRouterFlagEcho starts the app with -router echo on a redis-server
// and buys through the Echo route's lock tag, which waits while another
// replica holds the item.
func TestRouterFlagEcho(t *testing.T) {
	srv := redistest.Start(t)
	t.Setenv("REDIS_ADDR", srv.Addr())
	a := startApp(t, "-router", "echo")
	code, hdr, body, heldToken := waitingBuy(t, srv, "plum", func() (int, http.Header, string) {
		req, err := http.NewRequest(http.MethodPost, a.http+"/items/plum/buy", nil)
		if err != nil {
			return 0, nil, err.Error()
		}
		req.Header.Set("X-User", "alice")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, nil, err.Error()
		}
		defer resp.Body.Close()
		var o order
		if err := json.NewDecoder(resp.Body).Decode(&o); err != nil {
			return resp.StatusCode, resp.Header, err.Error()
		}
		return resp.StatusCode, resp.Header, o.SKU
	})
	token, _ := strconv.ParseInt(hdr.Get("X-Fencing-Token"), 10, 64)
	if code != http.StatusOK || body != "plum" || token <= heldToken {
		t.Fatalf("purchase through -router echo: %d %q, fencing token %d (the other replica's %d)", code, body, token, heldToken)
	}
}
