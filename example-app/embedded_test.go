package main

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/locktag/locktag/example-app/shopv1"
	"github.com/locktag/locktag/example-app/shopv1/shopv1connect"
	"github.com/locktag/locktag/internal/logtest"
	"github.com/locktag/locktag/locker"
)

// With no REDIS_* variable the app starts on the embedded miniredis, says so,
// serves a locked purchase over HTTP and gRPC, and on cancellation stops
// without leaving goroutines or listening ports behind.
func TestEmbeddedModeServesAndStops(t *testing.T) {
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out logtest.Buffer
	ready := make(chan [2]string, 1)
	done := make(chan error, 1)
	cfg := config{
		HTTPAddr: "127.0.0.1:0",
		GRPCAddr: "127.0.0.1:0",
		Quiet:    true,
		Getenv:   func(string) string { return "" },
		Ready:    func(h, g string) { ready <- [2]string{h, g} },
	}
	go func() { done <- run(ctx, cfg, &out) }()
	var addrs [2]string
	select {
	case addrs = <-ready:
	case err := <-done:
		t.Fatalf("run: %v\n%s", err, out.String())
	case <-time.After(10 * time.Second):
		t.Fatal("not ready within 10s")
	}
	for _, want := range []string{"WARNING: using an embedded miniredis", "embedded miniredis at 127.0.0.1:",
		"curl -s -X POST -H 'X-User: alice' http://" + addrs[0] + "/items/apple/buy",
		"grpcurl -plaintext -d '{\"sku\":\"apple\",\"user\":\"bob\"}' " + addrs[1] + " shop.v1.Shop/Buy",
		"connect:  http://" + addrs[0] + "/shop.v1.Shop/", "http://" + addrs[0] + "/std/items/apple/buy"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("banner lacks %q:\n%s", want, out.String())
		}
	}

	tr := &http.Transport{}
	resp, err := (&http.Client{Transport: tr}).Post("http://"+addrs[0]+"/items/apple/buy", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	b := readBody(t, resp)
	tr.CloseIdleConnections()
	if o := decode[order](t, b); resp.StatusCode != http.StatusOK || o.Holds != 2 || o.Fence <= 0 || o.StockLeft != 99 {
		t.Fatalf("HTTP buy: %d %s", resp.StatusCode, b)
	}
	conn := dialGRPC(t, addrs[1])
	g, err := shopv1.NewShopClient(conn).Buy(ctx, &shopv1.BuyRequest{Sku: "apple"})
	_ = conn.Close()
	if err != nil || g.GetHolds() != 2 || g.GetStockLeft() != 98 {
		t.Fatalf("gRPC buy: %v %v", g, err)
	}

	// connect-go on the HTTP port, with the gRPC protocol over h2c.
	h2c := &http.Transport{Protocols: new(http.Protocols)}
	h2c.Protocols.SetUnencryptedHTTP2(true)
	cc := shopv1connect.NewShopClient(&http.Client{Transport: h2c}, "http://"+addrs[0], connect.WithGRPC())
	c, err := cc.Buy(ctx, connect.NewRequest(&shopv1.BuyRequest{Sku: "apple"}))
	h2c.CloseIdleConnections()
	if err != nil || c.Msg.GetHolds() != 2 || c.Msg.GetStockLeft() != 97 {
		t.Fatalf("connect buy: %v %v", c, err)
	}
	resp, err = (&http.Client{Transport: tr}).Post("http://"+addrs[0]+"/std/items/apple/buy", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	b = readBody(t, resp)
	tr.CloseIdleConnections()
	if o := decode[order](t, b); resp.StatusCode != http.StatusOK || o.Holds != 2 || o.StockLeft != 96 {
		t.Fatalf("net/http buy: %d %s", resp.StatusCode, b)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run after cancel: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("run did not return within 15s of cancellation")
	}
	for _, a := range addrs {
		if c, err := net.DialTimeout("tcp", a, time.Second); err == nil {
			_ = c.Close()
			t.Errorf("%s still accepts connections", a)
		}
	}
	eventually(t, 5*time.Second, "goroutines back to the count before run", func() bool {
		return runtime.NumGoroutine() <= before
	})
	if t.Failed() {
		buf := make([]byte, 1<<16)
		t.Logf("goroutines:\n%s", buf[:runtime.Stack(buf, true)])
	}
}

// On the embedded miniredis, leases really expire: the clock the app drives
// advances miniredis's key expiries in real time.
func TestEmbeddedLeasesExpire(t *testing.T) {
	be, err := openBackend(context.Background(), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	ctx := testCtx(t)
	if _, err := be.lk.Obtain(ctx, "item:fig", locker.Params{TTL: 100 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	// Without the clock the key would never expire and every attempt would
	// be busy.
	var le *locker.Lease
	eventually(t, 5*time.Second, "the 100ms lease expired in miniredis", func() bool {
		le, err = be.lk.Obtain(ctx, "item:fig", locker.Params{})
		if err != nil && !errors.Is(err, locker.ErrNotObtained) {
			t.Fatal(err)
		}
		return err == nil
	})
	_ = le.Release(ctx)
}

func readBody(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
