package locktest

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/locker/guard/httprecord"
)

// onEach runs f on the embedded miniredis and on a redis-server (skipped
// where there is none), so every state is shown to behave the same on
// both. The project's LOCKTAG_REDIS_SERVER picks the server program, as
// for every Redis-backed test here (valkey-server in .ci/valkey.sh).
func onEach(t *testing.T, f func(t *testing.T, k *Kit), opts ...Option) {
	t.Run("miniredis", func(t *testing.T) { f(t, New(t, append(opts, WithEmbedded())...)) })
	t.Run("redis-server", func(t *testing.T) {
		f(t, New(t, append(opts, WithRedisServer(os.Getenv("LOCKTAG_REDIS_SERVER")))...))
	})
}

// lockGuard is the guard layer's lock guard for tag, on requests that
// are Values: what every adapter builds.
func lockGuard(t *testing.T, k *Kit, tag string) *guard.Lock[Values] {
	t.Helper()
	spec, err := keyexpr.ParseTag(tag)
	if err != nil {
		t.Fatal(err)
	}
	g, err := guard.CompileLock(k.Locker(), tag, Values{}.sources(spec.Templates()))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func run(g *guard.Lock[Values], v Values) guard.Outcome {
	return g.Run(context.Background(), v, "test", func(context.Context) error { return nil })
}

func wantKind(t *testing.T, what string, o guard.Outcome, want guard.Kind) {
	t.Helper()
	if o.Kind != want {
		t.Fatalf("%s: outcome %v (%v), want %v", what, o.Kind, o.Err, want)
	}
}

var order = Values{"path.id": "42"}

func TestHoldEachKind(t *testing.T) {
	for _, c := range []struct {
		tag  string
		want guard.Kind
	}{
		{`key:"order:{path.id}"`, guard.Busy},
		{`key:"order:{path.id}" limit:"3"`, guard.LimitFull},
		{`key:"order:{path.id}" mode:"read"`, guard.Busy},
		{`key:"order:{path.id}" mode:"write"`, guard.Busy},
		{`keys:"order:{path.id}, stock:{path.id}"`, guard.Busy},
		{`key:"order:{path.id}" keep:"1m"`, guard.Busy},
	} {
		t.Run(c.tag, func(t *testing.T) {
			onEach(t, func(t *testing.T, k *Kit) {
				g := lockGuard(t, k, c.tag)
				release := k.HoldTag(c.tag, order)
				wantKind(t, "held elsewhere", run(g, order), c.want)
				wantKind(t, "another order", run(g, Values{"path.id": "43"}), guard.OK)
				release()
				wantKind(t, "released", run(g, order), guard.OK)
			})
		})
	}
}

// A waiting guard is woken by the other process's release (pub/sub
// notice and hand-over), not by its safety re-check.
func TestHoldWakesWaiter(t *testing.T) {
	onEach(t, func(t *testing.T, k *Kit) {
		const tag = `key:"order:{path.id}" wait:"20s"`
		g := lockGuard(t, k, tag)
		release := k.Hold(k.Key(tag, order))
		done := make(chan guard.Outcome, 1)
		go func() { done <- run(g, order) }()
		waitFor(t, "the guard queued", func() bool {
			st, err := k.Locker().Inspect(context.Background(), "order:42")
			return err == nil && st.Queued == 1
		})
		start := time.Now()
		release()
		wantKind(t, "after release", <-done, guard.OK)
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("woken after %v: not by the release's notice", d)
		}
	})
}

func TestLoseCancelsHandler(t *testing.T) {
	onEach(t, func(t *testing.T, k *Kit) {
		const tag = `key:"order:{path.id}"`
		g := lockGuard(t, k, tag)
		var cause atomic.Value
		done := make(chan guard.Outcome, 1)
		go func() {
			done <- g.Run(context.Background(), order, "test", func(ctx context.Context) error {
				<-ctx.Done()
				cause.Store(context.Cause(ctx))
				return ctx.Err()
			})
		}()
		k.WaitHeld(k.Key(tag, order))
		k.Lose(k.Key(tag, order))
		o := <-done
		wantKind(t, "lost", o, guard.Lost)
		if err, _ := cause.Load().(error); !errors.Is(err, locker.ErrLockLost) {
			t.Fatalf("handler's cause %v, want ErrLockLost", err)
		}
		wantKind(t, "free again", run(g, order), guard.OK)
	})
}

// Lose also ends a lock another process holds, which learns it by its
// control notice.
func TestLoseOtherProcess(t *testing.T) {
	onEach(t, func(t *testing.T, k *Kit) {
		_ = k.Hold("job")
		k.Lose("job")
		g := lockGuard(t, k, `key:"job"`)
		wantKind(t, "after Lose", run(g, nil), guard.OK)
	})
}

func TestDownUp(t *testing.T) {
	onEach(t, func(t *testing.T, k *Kit) {
		g := lockGuard(t, k, `key:"order:{path.id}"`)
		wantKind(t, "up", run(g, order), guard.OK)
		k.Down()
		wantKind(t, "down", run(g, order), guard.Unavailable)
		wantKind(t, "still down", run(g, order), guard.Unavailable)
		k.Up()
		wantKind(t, "up again", run(g, order), guard.OK)
	})
}

func TestExhaustRate(t *testing.T) {
	const tag = `key:"api:{header.X-User}" rate:"5/1h"`
	user := Values{"header.X-User": "alice"}
	onEach(t, func(t *testing.T, k *Kit) {
		g := lockGuard(t, k, tag)
		k.ExhaustRate(tag, user)
		o := run(g, user)
		wantKind(t, "exhausted", o, guard.RateLimited)
		if o.RetryAfter <= 0 || o.RetryAfter > 12*time.Minute {
			t.Fatalf("retry after %v, want up to one interval (12m)", o.RetryAfter)
		}
		wantKind(t, "another user", run(g, Values{"header.X-User": "bob"}), guard.OK)
		if !k.Embedded() {
			return
		}
		k.Advance(12 * time.Minute)
		wantKind(t, "one interval later", run(g, user), guard.OK)
		wantKind(t, "and then", run(g, user), guard.RateLimited)
	})
}

// Advance expires what Redis keeps with a TTL: a `keep` lock here.
func TestAdvanceExpiresKeep(t *testing.T) {
	k := New(t, WithEmbedded())
	g := lockGuard(t, k, `key:"order:{path.id}" keep:"1h"`)
	wantKind(t, "first", run(g, order), guard.OK)
	wantKind(t, "kept", run(g, order), guard.Busy)
	k.Advance(time.Hour + time.Second)
	wantKind(t, "an hour later", run(g, order), guard.OK)
}

// After Advance, locking goes on as before on the moved clock: a waiter
// is handed the lock on release, and its fencing token is larger.
func TestAdvanceKeepsLocking(t *testing.T) {
	k := New(t, WithEmbedded())
	ctx := context.Background()
	le, err := k.Locker().Obtain(ctx, "res", locker.Params{})
	if err != nil {
		t.Fatal(err)
	}
	before := le.Token()
	_ = le.Release(ctx)
	k.Advance(24 * time.Hour)
	release := k.Hold("res")
	done := make(chan error, 1)
	var after int64
	go func() {
		le, err := k.Locker().Obtain(ctx, "res", locker.Params{Wait: 20 * time.Second})
		if err == nil {
			after = le.Token()
			err = le.Release(ctx)
		}
		done <- err
	}()
	waitFor(t, "the Obtain queued", func() bool {
		st, err := k.Locker().Inspect(ctx, "res")
		return err == nil && st.Queued == 1
	})
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if after <= before {
		t.Fatalf("token %d after %d", after, before)
	}
}

// Leases run out in real time on the embedded server too: its TTLs
// follow the clock (ClockTTL), not only Advance.
func TestLeasesExpireInRealTime(t *testing.T) {
	onEach(t, func(t *testing.T, k *Kit) {
		ctx := context.Background()
		if _, err := k.other.Obtain(ctx, "res", locker.Params{TTL: 100 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		if _, err := k.Locker().Obtain(ctx, "res", locker.Params{}); !errors.Is(err, locker.ErrNotObtained) {
			t.Fatalf("held: %v", err)
		}
		waitFor(t, "the 100ms lease ran out", func() bool {
			le, err := k.Locker().Obtain(ctx, "res", locker.Params{})
			if err == nil {
				_ = le.Release(ctx)
			}
			return err == nil
		})
	})
}

// Fencing tokens grow with every holder, the Kit's holders included.
func TestFencingGrows(t *testing.T) {
	onEach(t, func(t *testing.T, k *Kit) {
		ctx := context.Background()
		var last int64
		for i := range 3 {
			if i == 1 {
				k.Hold("res")()
			}
			le, err := k.Locker().Obtain(ctx, "res", locker.Params{})
			if err != nil {
				t.Fatal(err)
			}
			if le.Token() <= last {
				t.Fatalf("token %d after %d", le.Token(), last)
			}
			last = le.Token()
			_ = le.Release(ctx)
		}
	})
}

// The watchdog renews leases on the embedded server as on Redis, whose
// TTLs run down with the clock: a hold of many leases is not lost; cut
// off from Redis, it is.
func TestWatchdogRenews(t *testing.T) {
	onEach(t, func(t *testing.T, k *Kit) {
		ctx := context.Background()
		le, err := k.Locker().Obtain(ctx, "job", locker.Params{})
		if err != nil {
			t.Fatal(err)
		}
		ttl := func() time.Duration {
			d, err := le.TTL(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
		// Three leases' worth of renewals, seen through the TTL's rises.
		rises, last := 0, ttl()
		waitFor(t, "three renewals", func() bool {
			if d := ttl(); d > last {
				rises++
				last = d
			} else {
				last = d
			}
			return rises >= 3
		})
		if le.Lost() {
			t.Fatalf("lost while renewed: %v", context.Cause(le.Context()))
		}
		k.Down()
		select {
		case <-le.Context().Done():
		case <-time.After(10 * time.Second):
			t.Fatal("a lease cut off from Redis was not lost within 10s")
		}
		if !errors.Is(context.Cause(le.Context()), locker.ErrLockLost) {
			t.Fatalf("cause %v", context.Cause(le.Context()))
		}
		k.Up()
	}, WithLockerOptions(locker.WithWatchdog(2*time.Second, 500*time.Millisecond)))
}

func TestKeys(t *testing.T) {
	k := New(t)
	for _, c := range []struct {
		tag  string
		v    Values
		want string
	}{
		{`key:"order:{path.id}"`, order, "order:42"},
		{`key:"{method}:{header.X-User}"`, Values{"method": "POST", "header.X-User": "a:b"}, "POST:a%3Ab"},
		{`keys:"a:{path.id}, b:{path.id}"`, order, "a:42|b:42"},
	} {
		if got := strings.Join(k.Keys(c.tag, c.v), "|"); got != c.want {
			t.Errorf("Keys(%s) = %q, want %q", c.tag, got, c.want)
		}
	}
	if _, err := keysOf(`key:"order:{path.id}"`, Values{}); !errors.Is(err, keyexpr.ErrMissingValue) {
		t.Errorf("missing value: %v", err)
	}
}

// idemGuard is the guard layer's idempotency guard in the HTTP adapters'
// record format, keyed as they key it.
func idemGuard(t *testing.T, k *Kit, opts ...guard.Option) *guard.Idempotency[*http.Request] {
	t.Helper()
	g, err := guard.NewIdempotency[*http.Request](k.Locker(), httprecord.Format,
		append([]guard.Option{guard.WithScope(func(*http.Request) (string, error) { return "alice", nil })}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func payment(body string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/payments", strings.NewReader(body))
	r.Header.Set("Idempotency-Key", `"pay-1"`)
	return r
}

func runIdem(g *guard.Idempotency[*http.Request], r *http.Request, ran *int) guard.Outcome {
	body, _ := io.ReadAll(r.Body)
	q := httprecord.Request(r, "/payments", "Idempotency-Key", func(int64) ([]byte, error) { return body, nil })
	return g.Run(context.Background(), r, q, func(context.Context) guard.Answer {
		*ran++
		return guard.Answer{Status: http.StatusCreated, Sent: true}
	})
}

func TestCompletedReplays(t *testing.T) {
	onEach(t, func(t *testing.T, k *Kit) {
		g := idemGuard(t, k)
		k.Completed(HTTPCall{Request: payment(`{"cents":100}`), Route: "/payments", Scope: "alice"},
			http.StatusCreated, http.Header{"Content-Type": {"application/json"}}, []byte(`{"id":"pay_1"}`))
		ran := 0
		o := runIdem(g, payment(`{"cents":100}`), &ran)
		wantKind(t, "same request", o, guard.Replay)
		if ran != 0 || o.Record.Status != http.StatusCreated {
			t.Fatalf("ran %d, record %+v", ran, o.Record)
		}
		wantKind(t, "another body", runIdem(g, payment(`{"cents":200}`), &ran), guard.Mismatch)
		if !k.Embedded() {
			return
		}
		k.Advance(locker.DefaultIdempotencyTTL + time.Second)
		wantKind(t, "a day later", runIdem(g, payment(`{"cents":200}`), &ran), guard.OK)
		if ran != 1 {
			t.Fatalf("ran %d times, want 1", ran)
		}
	})
}

func TestInFlight(t *testing.T) {
	onEach(t, func(t *testing.T, k *Kit) {
		g := idemGuard(t, k)
		release := k.InFlight(HTTPCall{Request: payment(`{}`), Route: "/payments", Scope: "alice"})
		ran := 0
		wantKind(t, "in flight", runIdem(g, payment(`{}`), &ran), guard.InFlight)
		release()
		wantKind(t, "freed", runIdem(g, payment(`{}`), &ran), guard.OK)
		if ran != 1 {
			t.Fatalf("ran %d times, want 1", ran)
		}
	})
}

// A guard that waits for an in-flight key is woken when the first
// request ends (pub/sub notice) and, the key freed, runs the call.
func TestInFlightWaitRuns(t *testing.T) {
	onEach(t, func(t *testing.T, k *Kit) {
		g := idemGuard(t, k, guard.WithReplayWait(20*time.Second))
		release := k.InFlight(HTTPCall{Request: payment(`{}`), Route: "/payments", Scope: "alice"})
		ran := 0
		done := make(chan guard.Outcome, 1)
		go func() { done <- runIdem(g, payment(`{}`), &ran) }()
		select {
		case o := <-done:
			t.Fatalf("did not wait: %v", o.Kind)
		case <-time.After(50 * time.Millisecond): // a wait would show here
		}
		release() // freed, not completed: the waiter claims the key and runs
		o := <-done
		wantKind(t, "after the first ended", o, guard.OK)
		if ran != 1 {
			t.Fatalf("ran %d times, want 1", ran)
		}
	})
}

// A guard waiting for an in-flight key replays the first request's
// answer when that request completes (the notice of its record).
func TestInFlightWaitReplaysOnComplete(t *testing.T) {
	onEach(t, func(t *testing.T, k *Kit) {
		g := idemGuard(t, k, guard.WithReplayWait(20*time.Second))
		name, fp := k.identity(HTTPCall{Request: payment(`{}`), Route: "/payments", Scope: "alice"})
		claim, err := k.other.Idempotent(context.Background(), name, fp, locker.IdempotencyParams{})
		if err != nil {
			t.Fatal(err)
		}
		ran := 0
		done := make(chan guard.Outcome, 1)
		go func() { done <- runIdem(g, payment(`{}`), &ran) }()
		select {
		case o := <-done:
			t.Fatalf("did not wait: %v", o.Kind)
		case <-time.After(50 * time.Millisecond): // a refusal would come at once
		}
		rec := guard.EncodeRecord(httprecord.Format, guard.Answer{Status: http.StatusAccepted, Payload: httprecord.EncodeResponse(nil, nil, []byte("first"))})
		if err := claim.Complete(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
		o := <-done
		wantKind(t, "after the first completed", o, guard.Replay)
		if ran != 0 || o.Record.Status != http.StatusAccepted {
			t.Fatalf("ran %d, record %+v", ran, o.Record)
		}
	})
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10s: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// A redis-server that is not installed skips the test, naming it.
func TestMissingServerSkips(t *testing.T) {
	var sub *testing.T
	t.Run("missing", func(t *testing.T) {
		sub = t
		New(t, WithRedisServer("locktest-no-such-server"))
		t.Fatal("New returned without a server")
	})
	if !sub.Skipped() {
		t.Fatal("not skipped")
	}
}
