package locker_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
)

// longLease makes renewals far apart: a holder whose context ends within
// promptly of a force-release can only have been told by the notice.
var longLease = locker.WithWatchdog(60*time.Second, 20*time.Second)

// promptly bounds the notice's delivery; far below longLease's renewal
// interval, generous for a loaded machine.
const promptly = 5 * time.Second

// done waits up to within for ctx to end and reports whether it did.
func done(ctx context.Context, within time.Duration) bool {
	select {
	case <-ctx.Done():
		return true
	case <-time.After(within):
		return false
	}
}

// checkForced checks that le's context ended with a force-release cause
// naming reason.
func checkForced(t *testing.T, le *locker.Lease, reason string) {
	t.Helper()
	if !done(le.Context(), promptly) {
		t.Fatalf("holder's context not cancelled within %v of the force-release", promptly)
	}
	cause := context.Cause(le.Context())
	if !errors.Is(cause, locker.ErrLockLost) || !errors.Is(cause, locker.ErrForceReleased) {
		t.Fatalf("cause %v, want ErrLockLost and ErrForceReleased", cause)
	}
	if !strings.Contains(cause.Error(), "force-released: "+reason) {
		t.Fatalf("cause %q does not name the reason %q", cause, reason)
	}
	if !le.Lost() {
		t.Error("Lost() = false after a force-release")
	}
}

// TestForceRelease: a held mutex with a waiter queued in another Locker is
// freed by a third (the operator's): the waiter obtains it promptly with a
// larger fence, the holder's context is cancelled by the notice (long
// before its renewal) with the reason, its Release returns ErrNotHeld,
// its fence is refused once the new holder claimed, and the audit record
// names the lock, the reason, the actor and the holder.
func TestForceRelease(t *testing.T) {
	srv := redistest.Start(t)
	var holderLog, opLog bytes.Buffer
	holderLk := newLocker(t, srv, longLease, locker.WithLabel("holder@test"), locker.WithLogger(slog.New(slog.NewTextHandler(&holderLog, nil))))
	waiterLk := newLocker(t, srv, longLease)
	var mu sync.Mutex
	opLk := newLocker(t, srv, locker.WithLogger(slog.New(slog.NewTextHandler(lockedWriter{&mu, &opLog}, nil))))
	ctx := context.Background()

	old := mustObtain(t, holderLk, ctx, "job:7", locker.Params{Label: "job runner"})
	holderCtx := old.Context() // made before: the loss is logged before it ends
	fence := &locker.Fence{}
	if err := fence.Claim("job:7", old.Token()); err != nil {
		t.Fatal(err)
	}
	got := make(chan *locker.Lease, 1)
	go func() {
		le, err := waiterLk.Obtain(ctx, "job:7", locker.Params{Wait: time.Minute})
		if err != nil {
			t.Error(err)
		}
		got <- le
	}()
	eventually(t, promptly, "waiter queued", func() bool { return queueLen(t, srv, "job:7") == 1 })
	// The holder's control subscription is made in the background with
	// its first lease; a notice published before it is missed.
	eventually(t, promptly, "holder subscribed", func() bool { return numsub(t, srv, "locktag:ctl") >= 1 })

	oldOwner, _ := lockState(t, srv, "job:7")
	err := opLk.ForceRelease(locker.WithActor(ctx, "alice"), "job:7", "stuck job")
	if err != nil {
		t.Fatal(err)
	}
	var next *locker.Lease
	select {
	case next = <-got:
	case <-time.After(promptly):
		t.Fatal("waiter not granted the force-released lock")
	}
	if next == nil {
		t.FailNow()
	}
	defer next.Release(ctx)
	if next.Token() <= old.Token() {
		t.Errorf("new fence %d not above the old %d", next.Token(), old.Token())
	}
	checkForced(t, old, "stuck job")
	<-holderCtx.Done()
	if err := fence.Claim("job:7", next.Token()); err != nil {
		t.Fatal(err)
	}
	if err := fence.Check("job:7", old.Token()); !errors.Is(err, locker.ErrStaleToken) {
		t.Errorf("old holder's fence check: %v, want ErrStaleToken", err)
	}
	if err := old.Release(ctx); !errors.Is(err, locker.ErrNotHeld) {
		t.Errorf("old holder's Release: %v, want ErrNotHeld", err)
	}
	if owner, _ := lockState(t, srv, "job:7"); owner == "" {
		t.Error("the old holder's Release freed the new holder's lock")
	}

	mu.Lock()
	audit := opLog.String()
	mu.Unlock()
	for _, want := range []string{"level=WARN", "lock force-released", "job:7", "reason=\"stuck job\"", "actor=alice", "owner=" + oldOwner, `label="holder@test; job runner"`} {
		if !strings.Contains(audit, want) {
			t.Errorf("audit record %q lacks %q", audit, want)
		}
	}
	if !strings.Contains(holderLog.String(), "force-released: stuck job") {
		t.Errorf("holder's loss record %q does not name the force-release", holderLog.String())
	}
}

// TestForceReleaseControl: the same set-up with the holder's Locker deaf
// to notices. When a second holder, listening, has been told of its own
// force-release (so a notice had time to arrive), the deaf holder's context
// is still live: what ends it in TestForceRelease is the notice, not the
// renewal or anything else. Its loss shows at its next Extend (or renewal).
func TestForceReleaseControl(t *testing.T) {
	srv := redistest.Start(t)
	deafLk := newLocker(t, srv, longLease)
	locker.DisableForceNotices(deafLk)
	hearLk := newLocker(t, srv, longLease)
	opLk := newLocker(t, srv)
	ctx := context.Background()

	deaf := mustObtain(t, deafLk, ctx, "deaf", locker.Params{})
	hear := mustObtain(t, hearLk, ctx, "hear", locker.Params{})
	eventually(t, promptly, "listener subscribed", func() bool { return numsub(t, srv, "locktag:ctl") == 1 })
	if err := opLk.ForceRelease(ctx, "deaf", "control"); err != nil {
		t.Fatal(err)
	}
	if err := opLk.ForceRelease(ctx, "hear", "control"); err != nil {
		t.Fatal(err)
	}
	checkForced(t, hear, "control")
	if err := deaf.Context().Err(); err != nil {
		t.Fatalf("deaf holder's context ended without a notice: %v", context.Cause(deaf.Context()))
	}
	if err := deaf.Extend(ctx, time.Minute); !errors.Is(err, locker.ErrNotHeld) {
		t.Fatalf("deaf holder's Extend: %v, want ErrNotHeld", err)
	}
	if cause := context.Cause(deaf.Context()); !errors.Is(cause, locker.ErrLockLost) || errors.Is(cause, locker.ErrForceReleased) {
		t.Fatalf("deaf holder's cause %v, want a refused renewal's ErrLockLost", cause)
	}
}

// TestForceReleaseNotHeld: a free lock is ErrNotHeld and nothing is
// written; an empty name is ErrEmptyKey.
func TestForceReleaseNotHeld(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	ctx := context.Background()
	if err := lk.ForceRelease(ctx, "free", "x"); !errors.Is(err, locker.ErrNotHeld) {
		t.Fatalf("free lock: %v, want ErrNotHeld", err)
	}
	if err := lk.ForceRelease(ctx, "", "x"); !errors.Is(err, locker.ErrEmptyKey) {
		t.Fatalf("empty name: %v, want ErrEmptyKey", err)
	}
	if n := intReply(t, srv, "DBSIZE"); n != 0 {
		t.Fatalf("ForceRelease of a free lock left %d keys", n)
	}
	// Released before: still not held.
	le := mustObtain(t, lk, ctx, "free", locker.Params{})
	if err := le.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := lk.ForceRelease(ctx, "free", ""); !errors.Is(err, locker.ErrNotHeld) {
		t.Fatalf("released lock: %v, want ErrNotHeld", err)
	}
}

// TestForceReleaseUnavailable: Redis down is ErrUnavailable.
func TestForceReleaseUnavailable(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv, locker.WithCallTimeout(500*time.Millisecond))
	srv.Stop()
	if err := lk.ForceRelease(context.Background(), "k", "x"); !errors.Is(err, locker.ErrUnavailable) {
		t.Fatalf("Redis down: %v, want ErrUnavailable", err)
	}
}
