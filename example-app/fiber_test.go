package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v3"
)

// serveFiberApp serves the shop's Fiber routes on a loopback port until
// the test ends and returns the base URL.
func serveFiberApp(t *testing.T, s *shop) string {
	t.Helper()
	app, err := newFiberApp(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- app.Listener(ln, fiber.ListenConfig{DisableStartupMessage: true}) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = app.ShutdownWithContext(ctx)
		<-done
	})
	return "http://" + ln.Addr().String()
}

// Buying through the Fiber route's lock tag never oversells: concurrent
// buyers of a plum get one unit each until it is sold out, every sale with
// a fencing token, and the stock never goes below zero. The same purchase
// without the tag (buy-unlocked) is the control that oversells.
func TestFiberBuyThroughLockTag(t *testing.T) {
	_, lk := realRedis(t)
	const stock, buyers = 8, 24
	s := newShop(lk, newStore(2*time.Millisecond, map[string]int64{"plum": stock, "pear": stock}))
	base := serveFiberApp(t, s)

	buy := func(path, user string) (int, http.Header, string) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+path, nil)
		if err != nil {
			t.Error(err)
			return 0, nil, ""
		}
		req.Header.Set("X-User", user)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return 0, nil, ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(b)
	}
	rush := func(path string) (sold int, fences map[int64]bool, statuses map[int]int) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		fences, statuses = map[int64]bool{}, map[int]int{}
		for i := range buyers {
			wg.Go(func() {
				status, h, body := buy(path, "user-"+strconv.Itoa(i))
				mu.Lock()
				defer mu.Unlock()
				statuses[status]++
				if status == http.StatusOK {
					sold++
					if f, err := strconv.ParseInt(h.Get("X-Fencing-Token"), 10, 64); err == nil {
						fences[f] = true
					}
					if !strings.Contains(body, `"user":"user-`) {
						t.Errorf("order %s does not name its buyer", body)
					}
				}
			})
		}
		wg.Wait()
		return sold, fences, statuses
	}

	sold, fences, statuses := rush("/items/plum/buy")
	if sold != stock || statuses[http.StatusConflict] != buyers-stock {
		t.Errorf("locked: %d sold, statuses %v; want %d sold and %d sold out", sold, statuses, stock, buyers-stock)
	}
	if len(fences) != stock {
		t.Errorf("locked: %d distinct fencing tokens for %d sales", len(fences), stock)
	}
	it, err := s.db.Get("plum")
	if err != nil || it.Stock != 0 || it.Sold != stock {
		t.Errorf("plum after the rush: %+v %v, want stock 0, sold %d", it, err, stock)
	}

	// The control: without the tag the same rush oversells.
	sold, _, _ = rush("/items/pear/buy-unlocked")
	if sold <= stock {
		t.Errorf("control: the unlocked route sold %d of %d: the rush cannot show an oversell", sold, stock)
	}

	// The idempotent payment replays on Fiber too.
	pay := func() (int, string, string) {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/payments",
			strings.NewReader(`{"order_id":"ord_1","amount_cents":1999}`))
		req.Header.Set("X-User", "alice")
		req.Header.Set("Idempotency-Key", `"pay-1"`)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Idempotent-Replayed"), string(b)
	}
	s1, r1, b1 := pay()
	s2, r2, b2 := pay()
	var p map[string]any
	if s1 != http.StatusCreated || r1 != "" || s2 != http.StatusCreated || r2 != "true" || b1 != b2 || json.Unmarshal([]byte(b1), &p) != nil {
		t.Errorf("payments: %d %q %s, then %d %q %s; want 201, then the same replayed", s1, r1, b1, s2, r2, b2)
	}
}
