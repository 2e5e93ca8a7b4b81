package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/ops"
)

// The app serves the ops page: it lists another replica's item lock, and
// force-releases it only for a loopback caller.
func TestOpsPage(t *testing.T) {
	srv, lk := realRedis(t)
	s := newShop(lk, newStore(time.Millisecond, seedStock))
	h, err := newHTTPHandler(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	held := otherReplicaHolds(t, srv, "apple")

	for _, tc := range []struct {
		from       string
		canRelease bool
	}{{"192.0.2.1:5000", false}, {"127.0.0.1:5000", true}} {
		rec := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodGet, opsPath+"api/locks", nil)
		r.RemoteAddr = tc.from
		h.ServeHTTP(rec, r)
		var p ops.Page
		if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || rec.Code != 200 || len(p.Locks) != 1 ||
			p.Locks[0].Name != itemLock("apple") || p.Locks[0].CanRelease != tc.canRelease {
			t.Fatalf("list from %s: %d %s %v", tc.from, rec.Code, rec.Body, err)
		}
	}
	page := httptest.NewRecorder()
	h.ServeHTTP(page, httptest.NewRequest(http.MethodGet, opsPath, nil))
	if page.Code != 200 || !strings.Contains(page.Body.String(), itemLock("apple")) {
		t.Fatalf("page: %d %s", page.Code, page.Body)
	}

	release := func(from string) int {
		r := httptest.NewRequest(http.MethodPost, opsPath+"api/release", strings.NewReader(`{"name":"`+itemLock("apple")+`","reason":"test"}`))
		r.RemoteAddr = from
		r.Header.Set("X-Locktag-Ops", "1")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	if code := release("192.0.2.1:5000"); code != http.StatusForbidden || held.Context().Err() != nil {
		t.Fatalf("release from afar: %d", code)
	}
	if code := release("[::1]:5000"); code != http.StatusOK {
		t.Fatalf("release from loopback: %d", code)
	}
	<-held.Context().Done()
	if !errors.Is(context.Cause(held.Context()), locker.ErrLockLost) {
		t.Fatalf("cause %v", context.Cause(held.Context()))
	}
}
