package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/locktag/locktag/locker"
)

// TestItemReadWriteLock: GET /items/:id reads share the item's read/write
// lock — a read answers while another replica holds a read — and a
// restock (PUT /items/:id/stock) waits for that reader, then adds the
// stock. The control: while another replica holds the item for writing, a
// read is refused with 409 after its 1s wait.
func TestItemReadWriteLock(t *testing.T) {
	srv, lk := realRedis(t)
	s := newShop(lk, newStore(0, map[string]int64{"apple": 3}))
	r := newRouter(s, nil)
	other := otherReplica(t, srv)
	ctx := context.Background()

	reader, err := other.Obtain(ctx, itemLock("apple"), locker.Params{Mode: locker.Read})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if rec := do(r, http.MethodGet, "/items/apple", ""); rec.Code != http.StatusOK {
		t.Fatalf("GET while another replica reads: %d %s, want 200 (readers share)", rec.Code, rec.Body)
	}
	if d := time.Since(start); d >= time.Second {
		t.Fatalf("GET took %v: it waited for the other reader", d)
	}

	restocked := make(chan *httptest.ResponseRecorder, 1)
	go func() {
		restocked <- do(r, http.MethodPut, "/items/apple/stock", `{"add": 5}`, "Content-Type", "application/json")
	}()
	eventually(t, 5*time.Second, "the restock queued behind the reader", func() bool {
		n, _ := srv.Do("ZCARD", "locktag:{item:apple}:rw:q")
		return n == int64(1)
	})
	select {
	case rec := <-restocked:
		t.Fatalf("the restock answered %d while a reader held the item", rec.Code)
	default:
	}
	if err := reader.Release(ctx); err != nil {
		t.Fatal(err)
	}
	rec := <-restocked
	var it item
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &it) != nil || it.Stock != 8 {
		t.Fatalf("restock: %d %s, want 200 and stock 8", rec.Code, rec.Body)
	}

	writer, err := other.Obtain(ctx, itemLock("apple"), locker.Params{Mode: locker.Write})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = writer.Release(ctx) }()
	if rec := do(r, http.MethodGet, "/items/apple", ""); rec.Code != http.StatusConflict || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("control: GET while another replica writes: %d (Retry-After %q), want 409 with Retry-After", rec.Code, rec.Header().Get("Retry-After"))
	}
}

// TestReportLimit: GET /reports/sales runs at most twice at once per user.
// With both of alice's permits held (by another replica), her next report
// is refused at once with 429 and Retry-After; bob's is served; once a
// permit is free, alice's is served again.
func TestReportLimit(t *testing.T) {
	srv, lk := realRedis(t)
	s := newShop(lk, newStore(0, map[string]int64{"apple": 3}))
	r := newRouter(s, nil)
	other := otherReplica(t, srv)
	ctx := context.Background()
	var held []*locker.Lease
	for range 2 {
		le, err := other.Obtain(ctx, "report:alice", locker.Params{Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, le)
	}
	rec := do(r, http.MethodGet, "/reports/sales", "", "X-User", "alice")
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("alice's third report: %d (Retry-After %q) %s, want 429 with Retry-After", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
	if rec := do(r, http.MethodGet, "/reports/sales", "", "X-User", "bob"); rec.Code != http.StatusOK {
		t.Fatalf("bob's report: %d %s, want 200 (limits are per user)", rec.Code, rec.Body)
	}
	if err := held[0].Release(ctx); err != nil {
		t.Fatal(err)
	}
	rec = do(r, http.MethodGet, "/reports/sales", "", "X-User", "alice")
	var rep salesReport
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &rep) != nil || rep.Stock != 3 {
		t.Fatalf("alice's report with a permit free: %d %s, want 200 and stock 3", rec.Code, rec.Body)
	}
	_ = held[1].Release(ctx)
}

// TestReportRate: the report route is rate limited per user before its
// concurrency limit: ten a minute pass, the eleventh gets 429 with
// Retry-After and the RateLimit fields; another user is not affected.
func TestReportRate(t *testing.T) {
	_, lk := realRedis(t)
	s := newShop(lk, newStore(0, map[string]int64{"apple": 3}))
	r := newRouter(s, nil)
	for i := range 10 {
		if rec := do(r, http.MethodGet, "/reports/sales", "", "X-User", "carol"); rec.Code != http.StatusOK || rec.Header().Get("RateLimit") == "" {
			t.Fatalf("report %d: %d (RateLimit %q) %s, want 200 with RateLimit", i+1, rec.Code, rec.Header().Get("RateLimit"), rec.Body)
		}
	}
	rec := do(r, http.MethodGet, "/reports/sales", "", "X-User", "carol")
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" || rec.Header().Get("RateLimit-Policy") == "" {
		t.Fatalf("the eleventh report: %d %v %s, want 429 with Retry-After and RateLimit-Policy", rec.Code, rec.Header(), rec.Body)
	}
	if rec := do(r, http.MethodGet, "/reports/sales", "", "X-User", "dave"); rec.Code != http.StatusOK {
		t.Fatalf("another user's report: %d %s, want 200", rec.Code, rec.Body)
	}
}
