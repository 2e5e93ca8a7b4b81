package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/locktag/locktag/locker/locktest"
)

// The shop's routes in the states of their locks, rate limits and
// idempotency records, arranged with locker/locktest: no redis-server,
// each state set from outside the handler.
func TestShopStates(t *testing.T) {
	k := locktest.New(t)
	s := newShop(k.Locker(), newStore(0, map[string]int64{"apple": 10}))
	r := newRouter(s, nil)
	alice := []string{"X-User", "alice"}

	t.Run("buy waits for a purchase elsewhere", func(t *testing.T) {
		release := k.Hold(k.Key(buyTag, locktest.Values{"path.id": "apple"}))
		done := make(chan *httptest.ResponseRecorder)
		go func() { done <- post(r, "/items/apple/buy", "", alice...) }()
		eventually(t, 4*time.Second, "the purchase queued for the item's lock", func() bool {
			st, err := k.Locker().Inspect(t.Context(), "item:apple")
			return err == nil && st.Queued == 1
		})
		if it, _ := s.db.Get("apple"); it.Stock != 10 {
			t.Fatalf("sold while the lock was held elsewhere: stock %d", it.Stock)
		}
		release()
		if rec := <-done; rec.Code != http.StatusOK {
			t.Fatalf("after the release: %d %s", rec.Code, rec.Body)
		}
	})

	t.Run("reads wait out a restock elsewhere", func(t *testing.T) {
		release := k.HoldTag(restockTag, locktest.Values{"path.id": "apple"})
		defer release()
		if rec := do(r, http.MethodGet, "/items/apple", ""); rec.Code != http.StatusConflict {
			t.Fatalf("read during a restock: %d, want 409 after the tag's 1s wait", rec.Code)
		}
	})

	t.Run("reports: two at once, ten a minute", func(t *testing.T) {
		release := k.HoldTag(reportTag, locktest.Values{"header.X-User": "alice"})
		if rec := do(r, http.MethodGet, "/reports/sales", "", alice...); rec.Code != http.StatusTooManyRequests {
			t.Fatalf("limit full: %d", rec.Code)
		}
		release()
		k.ExhaustRate(reportRateTag, locktest.Values{"header.X-User": "alice"})
		rec := do(r, http.MethodGet, "/reports/sales", "", alice...)
		if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" {
			t.Fatalf("rate used up: %d %v", rec.Code, rec.Header())
		}
	})

	t.Run("Redis down and back", func(t *testing.T) {
		k.Down()
		if rec := post(r, "/items/apple/buy", "", alice...); rec.Code != http.StatusServiceUnavailable {
			t.Fatalf("Redis down: %d", rec.Code)
		}
		k.Up()
		if rec := post(r, "/items/apple/buy", "", alice...); rec.Code != http.StatusOK {
			t.Fatalf("Redis back: %d %s", rec.Code, rec.Body)
		}
	})

	t.Run("payments replay and refuse while in flight", func(t *testing.T) {
		const body = `{"order_id":"ord_1","amount_cents":1999}`
		first := func(key string) locktest.HTTPCall {
			req := httptest.NewRequest(http.MethodPost, "/payments", strings.NewReader(body))
			req.Header.Set("Idempotency-Key", key)
			return locktest.HTTPCall{Request: req, Route: "/payments", Scope: "alice"}
		}
		k.Completed(first(`"pay-1"`), http.StatusCreated, http.Header{"Content-Type": {"application/json"}}, []byte(`{"id":"pay_earlier"}`))
		rec := post(r, "/payments", body, "X-User", "alice", "Idempotency-Key", `"pay-1"`)
		if rec.Code != http.StatusCreated || !strings.Contains(rec.Body.String(), "pay_earlier") || s.Charges() != 0 {
			t.Fatalf("completed: %d %s, %d charges", rec.Code, rec.Body, s.Charges())
		}
		release := k.InFlight(first(`"pay-2"`))
		if rec := post(r, "/payments", body, "X-User", "alice", "Idempotency-Key", `"pay-2"`); rec.Code != http.StatusConflict {
			t.Fatalf("in flight: %d", rec.Code)
		}
		release()
		if rec := post(r, "/payments", body, "X-User", "alice", "Idempotency-Key", `"pay-2"`); rec.Code != http.StatusCreated || s.Charges() != 1 {
			t.Fatalf("freed: %d, %d charges", rec.Code, s.Charges())
		}
	})
}
