package locker_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
)

// recordSnapshot is the record's and its waiters' serialized values and
// absolute expiries: equal snapshots are byte-identical keys.
func recordSnapshot(t *testing.T, srv *redistest.Server, name string) string {
	t.Helper()
	var out string
	for _, k := range []string{"locktag:{" + name + "}:r", "locktag:{" + name + "}:rw"} {
		d, err := redis.Bytes(srv.Do("DUMP", k))
		if err != nil && !errors.Is(err, redis.ErrNil) {
			t.Fatal(err)
		}
		out += fmt.Sprintf("%s %x %d\n", k, d, intReply(t, srv, "PEXPIRETIME", k))
	}
	return out
}

// TestInspectIdempotency: InspectIdempotency reads a record in flight
// (with its owner and waiters) and done, by the name ListStored lists,
// finds nothing for a missing or abandoned record, and changes nothing.
func TestInspectIdempotency(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	ctx := context.Background()
	name := locker.IdempotencyName("POST /payments", "alice", "k1")
	sum := sha256.Sum256([]byte("10 EUR"))
	fp := hex.EncodeToString(sum[:])

	if st, ok, err := lk.InspectIdempotency(ctx, name); ok || err != nil || st != (locker.IdempotencyState{}) {
		t.Fatalf("no record: %+v %v %v", st, ok, err)
	}
	if _, _, err := lk.InspectIdempotency(ctx, ""); !errors.Is(err, locker.ErrEmptyKey) {
		t.Fatalf("empty name: %v, want ErrEmptyKey", err)
	}

	lease := 10 * time.Second
	c := mustClaim(t, lk, name, "10 EUR", locker.IdempotencyParams{Lease: lease, TTL: time.Minute})
	found, _, err := lk.ListStored(ctx, "", "")
	if err != nil || len(found) != 1 || found[0].Kind != locker.KindIdempotency || found[0].Name != name {
		t.Fatalf("ListStored: %+v %v", found, err)
	}
	before := recordSnapshot(t, srv, name)
	st, ok, err := lk.InspectIdempotency(ctx, found[0].Name)
	if !ok || err != nil {
		t.Fatalf("in flight: ok %v, %v", ok, err)
	}
	if st.Name != name || st.State != locker.IdempotencyInFlight || st.Fingerprint != fp || len(st.Owner) != 22 ||
		st.ExpiresIn <= 0 || st.ExpiresIn > lease || st.Waiting != 0 {
		t.Fatalf("in flight: %+v", st)
	}
	if after := recordSnapshot(t, srv, name); after != before {
		t.Fatalf("InspectIdempotency changed the record:\nbefore %s\nafter  %s", before, after)
	}

	// A caller waits for it.
	replayed := make(chan error, 1)
	go func() {
		r, err := lk.Idempotent(ctx, name, "10 EUR", locker.IdempotencyParams{Wait: 30 * time.Second})
		if err == nil {
			if out, ok := r.Replay(); !ok || string(out) != "receipt" {
				err = fmt.Errorf("replay %q %v", out, ok)
			}
		}
		replayed <- err
	}()
	eventually(t, 5*time.Second, "the waiter is counted", func() bool {
		st, ok, err := lk.InspectIdempotency(ctx, name)
		return ok && err == nil && st.Waiting == 1 && st.State == locker.IdempotencyInFlight
	})
	if err := c.Complete(ctx, []byte("receipt")); err != nil {
		t.Fatal(err)
	}
	if err := <-replayed; err != nil {
		t.Fatalf("the waiter: %v", err)
	}
	st, ok, err = lk.InspectIdempotency(ctx, name)
	if !ok || err != nil || st.State != locker.IdempotencyDone || st.Fingerprint != fp || st.Owner != "" ||
		st.ExpiresIn <= 50*time.Second || st.ExpiresIn > time.Minute || st.Waiting != 0 {
		t.Fatalf("done: %+v %v %v", st, ok, err)
	}

	// An abandoned record is gone.
	other := locker.IdempotencyName("POST /payments", "alice", "k2")
	a := mustClaim(t, lk, other, "20 EUR", locker.IdempotencyParams{})
	if err := a.Abandon(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := lk.InspectIdempotency(ctx, other); ok || err != nil {
		t.Fatalf("abandoned: ok %v, %v", ok, err)
	}
}

// TestInspectIdempotencyRefused: a record of another protocol, or one no
// protocol wrote, is refused with ErrProtocol (not ErrUnavailable) and
// left as it was, its waiters too.
func TestInspectIdempotencyRefused(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	ctx := context.Background()
	name := locker.IdempotencyName("POST /pay", "", "k1")
	same := futureRecord(t, srv, "idem", "locktag:{"+name+"}:r")
	intReply(t, srv, "SADD", "locktag:{"+name+"}:rw", "future-waiter")
	before := recordSnapshot(t, srv, name)
	_, ok, err := lk.InspectIdempotency(ctx, name)
	wantProtocol(t, "inspect idempotency", err)
	if ok {
		t.Error("ok for a refused record")
	}
	same()
	if after := recordSnapshot(t, srv, name); after != before {
		t.Fatalf("the refusal changed the keys:\nbefore %s\nafter  %s", before, after)
	}

	if _, err := srv.Do("SET", "locktag:{unknown}:r", "not a record"); err != nil {
		t.Fatal(err)
	}
	_, _, err = lk.InspectIdempotency(ctx, "unknown")
	if !errors.Is(err, locker.ErrProtocol) || errors.Is(err, locker.ErrUnavailable) || !strings.Contains(err.Error(), "protocol unknown") {
		t.Fatalf("a value no protocol wrote: %v, want ErrProtocol naming protocol unknown", err)
	}
	if v, err := redis.String(srv.Do("GET", "locktag:{unknown}:r")); v != "not a record" || err != nil {
		t.Fatalf("the value no protocol wrote, after: %q %v", v, err)
	}
}

// TestInspectIdempotencyUnavailable: a Redis that does not answer is
// ErrUnavailable.
func TestInspectIdempotencyUnavailable(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	srv.Stop()
	if _, ok, err := lk.InspectIdempotency(context.Background(), "idem:x"); ok || !errors.Is(err, locker.ErrUnavailable) {
		t.Fatalf("ok %v, %v; want ErrUnavailable", ok, err)
	}
}

// TestInspectIdempotencyRedlock: a Redlock Locker keeps no records, so it
// refuses with ErrIdempotencyUnsupported, as Idempotent does, and touches
// no master.
func TestInspectIdempotencyRedlock(t *testing.T) {
	srvs := redistest.StartN(t, 3)
	lk := newRedlock(t, srvs)
	if _, ok, err := lk.InspectIdempotency(context.Background(), "idem:x"); ok || !errors.Is(err, locker.ErrIdempotencyUnsupported) {
		t.Fatalf("ok %v, %v; want ErrIdempotencyUnsupported", ok, err)
	}
	for i, s := range srvs {
		if n := intReply(t, s, "DBSIZE"); n != 0 {
			t.Fatalf("master %d has %d keys", i, n)
		}
	}
}
