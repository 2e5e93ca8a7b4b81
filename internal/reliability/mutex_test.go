package reliability

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
)

// TestWorkload: goroutines over four pools and two separate OS processes do
// read-modify-write sections on one key through a fenced store. No two
// confirmed sections overlap, every section is confirmed (no faults here),
// no update is lost and no token is stale.
func TestWorkload(t *testing.T) {
	srv := redistest.Start(t)
	st := newStore(true)
	url := st.serve(t)
	var c collector
	params := locker.Params{TTL: 10 * time.Second, Wait: time.Minute}
	const iters = 15

	var dones []<-chan struct{}
	for i := range 2 {
		_, done := startWorker(t, childEnv{addr: srv.Addr(), store: url, client: fmt.Sprintf("proc%d", i), key: "counter",
			iters: iters, ttl: params.TTL, wait: params.Wait, think: time.Millisecond}, &c)
		dones = append(dones, done)
	}
	runGoroutines(context.Background(), separatePools(t, srv, 4), st, &c, func(i int) work {
		return work{client: fmt.Sprintf("g%d", i), key: "counter", iters: iters, params: params, think: time.Millisecond}
	})
	for _, d := range dones {
		within(t, 60*time.Second, "worker process done", d)
	}

	secs := c.sections()
	n := countSections(secs)
	value, writes, lost, stale := st.stats("counter")
	t.Logf("%d sections (%d confirmed), value %d, writes %d, lost %d, stale %d, errors %v", n.sections, n.confirmed, value, writes, lost, stale, c.errs.snapshot())
	if want := 6 * iters; n.sections != want || n.confirmed != want {
		t.Fatalf("%d sections, %d confirmed; want %d of each (errors %v)", n.sections, n.confirmed, want, c.errs.snapshot())
	}
	if o := overlaps(secs, false); o != 0 {
		t.Fatalf("%d overlapping critical sections", o)
	}
	if lost != 0 || stale != 0 || value != int64(n.sections) || writes != value {
		t.Fatalf("store: value %d, writes %d, lost updates %d, stale %d; want %d, %d, 0, 0", value, writes, lost, stale, n.sections, n.sections)
	}
}

// brokenLockers are Lockers that cannot see each other's locks: each
// writes under its own key prefix (a deliberately broken lock).
func brokenLockers(t *testing.T, srv *redistest.Server, n int) []*locker.Locker {
	out := make([]*locker.Locker, n)
	for i := range out {
		out[i] = newLocker(t, srv.Pool(t), locker.WithKeyPrefix(fmt.Sprintf("broken%d:", i)))
	}
	return out
}

// TestWorkloadControl proves each check catches what it is for, with a
// broken lock: the overlap detector fires; without fencing the store sees
// lost updates (and its value falls short of the writes); with fencing it
// refuses stale tokens and loses nothing.
func TestWorkloadControl(t *testing.T) {
	srv := redistest.Start(t)
	for _, fenced := range []bool{false, true} {
		t.Run(fmt.Sprintf("fenced=%t", fenced), func(t *testing.T) {
			st := newStore(fenced)
			var c collector
			runGoroutines(context.Background(), brokenLockers(t, srv, 4), st, &c, func(i int) work {
				return work{client: fmt.Sprintf("g%d", i), key: "counter", iters: 15,
					params: locker.Params{TTL: 10 * time.Second, Wait: time.Minute}, think: time.Millisecond}
			})
			secs := c.sections()
			value, writes, lost, stale := st.stats("counter")
			o := overlaps(secs, true)
			t.Logf("broken lock: %d overlaps, value %d, writes %d, lost %d, stale %d", o, value, writes, lost, stale)
			if o == 0 {
				t.Fatal("overlap detector missed a broken lock")
			}
			if !fenced && (lost == 0 || value >= writes) {
				t.Fatalf("lost-update check missed a broken lock: lost %d, value %d, writes %d", lost, value, writes)
			}
			if fenced && (stale == 0 || lost != 0 || value != writes) {
				t.Fatalf("fencing did not protect the store from a broken lock: stale %d, lost %d, value %d, writes %d", stale, lost, value, writes)
			}
		})
	}
}
