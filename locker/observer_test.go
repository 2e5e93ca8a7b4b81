package locker_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/obstest"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker"
)

// An Observer sees every operation started and ended once, with the
// state its Start returned; the hold's context is the lease's base; the
// key only with WithKeyAttribute(true).
func TestObserverEvents(t *testing.T) {
	srv := redistest.Start(t)
	for _, keys := range []bool{false, true} {
		rec := new(obstest.Recorder)
		lk := newLocker(t, srv, locker.WithObserver(rec), locker.WithKeyAttribute(keys))
		ctx := context.Background()
		p := locker.Params{Name: "pay", TTL: time.Minute}
		le, err := lk.Obtain(ctx, "obs:1", p)
		if err != nil {
			t.Fatal(err)
		}
		if obstest.HoldOf(le.Context()) == nil {
			t.Fatal("the lease's context does not derive from StartHold's")
		}
		inner, err := lk.Obtain(le.Context(), "obs:1", p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := lk.Obtain(ctx, "obs:1", p); !errors.Is(err, locker.ErrNotObtained) {
			t.Fatalf("busy Obtain: %v", err)
		}
		_ = inner.Release(ctx)
		_ = le.Release(ctx)
		if _, err := lk.Allow(ctx, "obs:rate:"+strconv.FormatBool(keys), locker.RateParams{Limit: 1, Period: time.Hour}); err != nil {
			t.Fatal(err)
		}
		c, err := lk.Idempotent(ctx, "obs:idem:"+strconv.FormatBool(keys), "f", locker.IdempotencyParams{})
		if err != nil {
			t.Fatal(err)
		}
		_ = c.Abandon(ctx)
		_ = lk.ForceRelease(ctx, "obs:none", "")

		if v := rec.Violations(); len(v) > 0 || len(rec.Open()) > 0 {
			t.Fatalf("violations %v, still open %v", v, rec.Open())
		}
		key := ""
		if keys {
			key = "obs:1"
		}
		ev := rec.Events()
		for _, want := range []string{
			"obtain.end acquired key=" + key + " keys=0",
			"obtain.end reentered key=" + key,
			"obtain.end busy key=" + key,
			"hold.fence " + fenceOf(le) + " key=" + key,
			"hold.end fence=" + fenceOf(le) + " lost=false",
			"release.end holds=2 err=<nil>",
			"release.end holds=1 err=<nil>",
			"rate.end admitted",
			"idempotency.end idempotency executed",
			"force.end name=",
		} {
			if !slices.ContainsFunc(ev, func(e string) bool { return strings.HasPrefix(e, want) }) {
				t.Errorf("WithKeyAttribute(%v): no event %q in %q", keys, want, ev)
			}
		}
	}
}

func fenceOf(le *locker.Lease) string { return strconv.FormatInt(le.Token(), 10) }

// A lost lock's hold ends with a cause matching ErrLockLost, after its
// renewals were reported against the hold's state.
func TestObserverLost(t *testing.T) {
	srv := redistest.Start(t)
	rec := new(obstest.Recorder)
	lk := newLocker(t, srv, locker.WithObserver(rec), locker.WithWatchdog(300*time.Millisecond, 50*time.Millisecond))
	le, err := lk.Obtain(context.Background(), "obs:lost", locker.Params{})
	if err != nil {
		t.Fatal(err)
	}
	lctx := le.Context()
	testwait.Eventually(t, "a renewal", func() bool { return slices.Contains(rec.Events(), "renewal ok=true err=false") })
	if _, err := srv.Do("DEL", "locktag:{obs:lost}"); err != nil {
		t.Fatal(err)
	}
	testwait.Recv(t, lctx.Done(), "the loss")
	testwait.Eventually(t, "the hold's end", func() bool {
		return slices.Contains(rec.Events(), "hold.end fence="+fenceOf(le)+" lost=true")
	})
	_ = le.Release(context.Background())
	if v := rec.Violations(); len(v) > 0 || len(rec.Open()) > 0 {
		t.Fatalf("violations %v, still open %v", v, rec.Open())
	}
}
