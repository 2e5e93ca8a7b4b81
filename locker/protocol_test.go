package locker_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/logtest"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
)

// futureRecord writes a made-up protocol-2 record of kind ("mutex",
// "sem", "idem", "rate") under key as protocol 2 marks it
// (docs/protocol.md), expiring in a minute, and returns a check that it is
// still there byte for byte with the same expiry.
func futureRecord(t *testing.T, srv *redistest.Server, kind, key string) func() {
	t.Helper()
	at := time.Now().Add(time.Minute).UnixMilli()
	switch kind {
	case "sem":
		intReply(t, srv, "ZADD", key, 2, "@", at, "future-holder")
	default:
		if _, err := srv.Do("SET", key, fmt.Sprintf("@2 %d future record", at), "PXAT", at); err != nil {
			t.Fatal(err)
		}
	}
	intReply(t, srv, "PEXPIREAT", key, at)
	dump, err := srv.Do("DUMP", key)
	if err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		d, err := srv.Do("DUMP", key)
		if err != nil {
			t.Fatal(err)
		}
		if string(d.([]byte)) != string(dump.([]byte)) {
			t.Errorf("%s changed", key)
		}
		if got := intReply(t, srv, "PEXPIRETIME", key); got != at {
			t.Errorf("%s expires at %d, was %d", key, got, at)
		}
	}
}

// wantProtocol fails unless err is ErrProtocol naming protocols 2 and 1,
// and not ErrUnavailable.
func wantProtocol(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, locker.ErrProtocol) || errors.Is(err, locker.ErrUnavailable) {
		t.Fatalf("%s: %v; want ErrProtocol (and not ErrUnavailable)", what, err)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "locker: ") || !strings.Contains(msg, "protocol 2") || !strings.Contains(msg, "protocol 1") {
		t.Fatalf("%s: %q does not name both protocols", what, msg)
	}
}

// TestProtocolRefusedEverywhere: every operation that meets a record of
// a made-up protocol 2 fails with ErrProtocol at once (a waiter does not
// wait) and leaves the record as it was, expiry and all.
func TestProtocolRefusedEverywhere(t *testing.T) {
	srv := redistest.Start(t)
	logger, rec := logtest.New()
	lk := newLocker(t, srv, locker.WithLogger(logger))
	ctx := context.Background()

	for _, c := range []struct {
		kind, key, name string
		p               locker.Params
	}{
		{"mutex", "locktag:{m}", "m", locker.Params{TTL: time.Second}},
		{"mutex", "locktag:{mw}", "mw", locker.Params{TTL: time.Second, Wait: 5 * time.Second}},
		{"sem", "locktag:{s}:s", "s", locker.Params{TTL: time.Second, Limit: 3}},
		{"sem", "locktag:{sw}:s", "sw", locker.Params{TTL: time.Second, Limit: 3, Wait: 5 * time.Second}},
		{"sem", "locktag:{r}:rw", "r", locker.Params{TTL: time.Second, Mode: locker.Read}},
		{"sem", "locktag:{w}:rw", "w", locker.Params{TTL: time.Second, Mode: locker.Write, Wait: 5 * time.Second}},
	} {
		same := futureRecord(t, srv, c.kind, c.key)
		start := time.Now()
		_, err := lk.Obtain(ctx, c.name, c.p)
		wantProtocol(t, "obtain "+c.key, err)
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("obtain %s took %v: a refusal must not wait", c.key, d)
		}
		_, err = lk.Inspect(ctx, c.name)
		wantProtocol(t, "inspect "+c.key, err)
		err = lk.ForceRelease(ctx, c.name, "test")
		wantProtocol(t, "force-release "+c.key, err)
		same()
	}

	// A held lock whose record another protocol has replaced.
	for _, c := range []struct {
		kind, key, name string
		p               locker.Params
	}{
		{"mutex", "locktag:{hm}", "hm", locker.Params{TTL: 10 * time.Second}},
		{"sem", "locktag:{hs}:s", "hs", locker.Params{TTL: 10 * time.Second, Limit: 2}},
	} {
		le := mustObtain(t, lk, ctx, c.name, c.p)
		intReply(t, srv, "DEL", c.key)
		same := futureRecord(t, srv, c.kind, c.key)
		wantProtocol(t, "extend "+c.key, le.Extend(ctx, 10*time.Second))
		_, err := le.TTL(ctx)
		wantProtocol(t, "ttl "+c.key, err)
		wantProtocol(t, "release "+c.key, le.Release(ctx))
		same()
	}

	same := futureRecord(t, srv, "mutex", "locktag:{b}")
	_, err := lk.ObtainMany(ctx, []string{"a", "b", "c"}, locker.Params{TTL: time.Second})
	wantProtocol(t, "obtain many", err)
	same()
	if n := intReply(t, srv, "EXISTS", "locktag:{a}", "locktag:{c}"); n != 0 {
		t.Errorf("obtain many left %d of its other keys taken", n)
	}

	name := locker.IdempotencyName("POST /pay", "", "k1")
	same = futureRecord(t, srv, "idem", "locktag:{"+name+"}:r")
	_, err = lk.Idempotent(ctx, name, strings.Repeat("0", 64), locker.IdempotencyParams{})
	wantProtocol(t, "idempotent", err)
	_, _, err = lk.InspectIdempotency(ctx, name)
	wantProtocol(t, "inspect idempotency", err)
	same()

	same = futureRecord(t, srv, "rate", "locktag:{api}:rate")
	_, err = lk.Allow(ctx, "api", locker.RateParams{Limit: 10, Period: time.Second})
	wantProtocol(t, "allow", err)
	_, _, err = lk.InspectRate(ctx, "api")
	wantProtocol(t, "inspect rate", err)
	same()

	if n := len(rec.Matching("records of another protocol")); n != 1 {
		t.Errorf("the Locker logged the other protocol %d times, want once:\n%s", n, rec)
	}
}

// ExampleProtocolVersion: the Redis protocol this release speaks.
func ExampleProtocolVersion() {
	fmt.Println("protocol", locker.ProtocolVersion)
	// Output: protocol 1
}
