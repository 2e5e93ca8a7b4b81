package main

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/gomodule/redigo/redis"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/middleware"
)

// POST /payments charges once per (X-User, Idempotency-Key): a retry replays
// the first response, another user's identical key is a separate payment,
// the key reused for another body is 422, and no caller scope is 401.
func TestPaymentReplay(t *testing.T) {
	_, lk := realRedis(t)
	s := newShop(lk, newStore(0, nil))
	r := newRouter(s, nil)
	const body = `{"order_id":"ord_1","amount_cents":1999}`
	pay := func(user, key, body string) (int, string, string) {
		rec := post(r, "/payments", body, "X-User", user, "Idempotency-Key", key, "Content-Type", "application/json")
		return rec.Code, rec.Header().Get("Idempotent-Replayed"), rec.Body.String()
	}

	code, replayed, first := pay("alice", `"pay-1"`, body)
	if code != http.StatusCreated || replayed != "" {
		t.Fatalf("first: %d replayed=%q %s", code, replayed, first)
	}
	code, replayed, again := pay("alice", `"pay-1"`, body)
	if code != http.StatusCreated || replayed != "true" || again != first {
		t.Fatalf("retry: %d replayed=%q %s; want 201, true, %s", code, replayed, again, first)
	}
	if s.Charges() != 1 {
		t.Fatalf("%d charges after a retry, want 1", s.Charges())
	}
	if code, _, b := pay("bob", `"pay-1"`, body); code != http.StatusCreated || decode[payment](t, b).User != "bob" {
		t.Fatalf("bob's own pay-1: %d %s", code, b)
	}
	if code, _, _ := pay("alice", `"pay-1"`, `{"order_id":"ord_1","amount_cents":5}`); code != http.StatusUnprocessableEntity {
		t.Fatalf("key reused with another body: %d, want 422", code)
	}
	if code, _, _ := pay("", `"pay-2"`, body); code != http.StatusUnauthorized {
		t.Fatalf("no X-User: %d, want 401", code)
	}
	if code, _, _ := pay("alice", "", body); code != http.StatusBadRequest {
		t.Fatalf("no key: %d, want 400", code)
	}
	if s.Charges() != 2 {
		t.Fatalf("%d charges, want 2 (alice's and bob's)", s.Charges())
	}

	// Concurrent duplicates: exactly one executes; the others are told it
	// is in flight (409) or get the replay.
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if code, _, b := pay("carol", `"pay-3"`, body); code != http.StatusCreated && code != http.StatusConflict {
				t.Errorf("duplicate: %d %s", code, b)
			}
		}()
	}
	wg.Wait()
	if s.Charges() != 3 {
		t.Fatalf("%d charges after 20 concurrent duplicates, want 3", s.Charges())
	}
}

// TestRoutesChecked: the shop's lock tags pass the start-up check serve runs.
func TestRoutesChecked(t *testing.T) {
	_, lk := realRedis(t)
	s := newShop(lk, newStore(0, seedStock))
	if err := middleware.CheckRoutes(newRouter(s, nil)); err != nil {
		t.Fatal(err)
	}
}

// TestRedlockBackendPayments: on REDIS_REDLOCK the lock is Redlock, which
// keeps no idempotency records, so the backend keeps them, openly, on the
// first master alone; payments still replay, and the records are there
// and on no other master.
func TestRedlockBackendPayments(t *testing.T) {
	srvs := redistest.StartN(t, 3)
	addrs := make([]string, len(srvs))
	for i, srv := range srvs {
		addrs[i] = srv.Addr()
	}
	env := map[string]string{"REDIS_REDLOCK": strings.Join(addrs, ",")}
	be, err := openBackend(context.Background(), func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	if !strings.Contains(be.desc, "idempotency records on "+addrs[0]) {
		t.Fatalf("banner %q does not say where the records are", be.desc)
	}
	s := newShop(be.lk, newStore(0, nil))
	s.records = be.records
	r := newRouter(s, nil)
	const body = `{"order_id":"ord_1","amount_cents":1999}`
	for i := range 2 {
		rec := post(r, "/payments", body, "X-User", "alice", "Idempotency-Key", `"pay-1"`, "Content-Type", "application/json")
		if rec.Code != http.StatusCreated {
			t.Fatalf("payment %d: %d %s", i, rec.Code, rec.Body)
		}
	}
	if s.Charges() != 1 {
		t.Fatalf("%d charges, want 1", s.Charges())
	}
	for i, srv := range srvs {
		keys, err := redis.Strings(srv.Do("KEYS", "locktag:{idem:*"))
		if err != nil {
			t.Fatal(err)
		}
		if want := i == 0; (len(keys) > 0) != want {
			t.Fatalf("master %d holds idempotency records %v; want them on master 0 only", i, keys)
		}
	}
}
