package reliability

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/reliability/faults"
	"github.com/locktag/locktag/locker"
)

// TestRedlockPartition: a Redlock lease over three masters, each behind a
// toxiproxy. A master partitioned mid-hold (its replies swallowed, so calls
// hang until the per-master timeout rather than fail fast) costs nothing:
// renewals keep the majority and a contender stays out. A second partition
// takes the majority away: the holder's context is cancelled with
// ErrLockLost within its lease. After healing, the contender gets the lock
// with a larger fencing token, the stale holder's write is refused, and its
// release does not free the new holder's lock.
func TestRedlockPartition(t *testing.T) {
	srvs := redistest.StartN(t, 3)
	pxs := make([]*faults.Proxy, 3)
	holderPools := make([]*redis.Pool, 3)
	directPools := make([]*redis.Pool, 3)
	for i, s := range srvs {
		pxs[i] = faults.NewProxy(t, s.Addr())
		holderPools[i] = pxs[i].Pool(t, faults.PoolOptions{Timeout: 2 * time.Second})
		directPools[i] = s.Pool(t)
	}
	const lease, slack = time.Second, 1500 * time.Millisecond
	opts := []locker.Option{locker.WithWatchdog(lease, lease/5), locker.WithNodeTimeout(100 * time.Millisecond)}
	holder := newRedlock(t, holderPools, opts...)
	contender := newRedlock(t, directPools, opts...)
	st := newStore(true)
	ctx := context.Background()

	le, err := holder.Obtain(ctx, "rl", locker.Params{})
	if err != nil {
		t.Fatal(err)
	}
	v, err := st.Read(ctx, "rl", le.Token())
	if err != nil {
		t.Fatal(err)
	}

	cut0 := pxs[0].Timeout(faults.Downstream, 0)
	time.Sleep(2 * lease) // the fault: one master unreachable for two leases
	if le.Lost() {
		t.Fatalf("lost with one master of three partitioned: %v", context.Cause(le.Context()))
	}
	if _, err := contender.Obtain(ctx, "rl", locker.Params{}); !errors.Is(err, locker.ErrNotObtained) {
		t.Fatalf("contender during one partition: %v, want ErrNotObtained", err)
	}

	cut1 := pxs[1].Timeout(faults.Downstream, 0)
	cut := time.Now()
	select {
	case <-le.Context().Done():
	case <-time.After(lease + slack):
		t.Fatal("holder kept a lease after losing the majority")
	}
	t.Logf("majority loss noticed after %v", time.Since(cut).Round(time.Millisecond))
	if !errors.Is(context.Cause(le.Context()), locker.ErrLockLost) {
		t.Fatalf("cause %v", context.Cause(le.Context()))
	}
	pxs[0].Remove(cut0)
	pxs[1].Remove(cut1)

	le2, err := contender.Obtain(ctx, "rl", locker.Params{Wait: 10 * time.Second})
	if err != nil {
		t.Fatalf("contender after healing: %v", err)
	}
	if le2.Token() <= le.Token() {
		t.Fatalf("token %d after %d", le2.Token(), le.Token())
	}
	v2, err := st.Read(ctx, "rl", le2.Token())
	if err == nil {
		err = st.Write(ctx, "rl", le2.Token(), v2, v2+1)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Write(ctx, "rl", le.Token(), v, v+1); !errors.Is(err, errStale) {
		t.Fatalf("stale holder's write: %v, want stale", err)
	}
	_ = le.Release(ctx) // must not free le2's lock
	held := 0
	for _, s := range srvs {
		if owner(t, s, "rl") != "" {
			held++
		}
	}
	if held < 2 {
		t.Fatalf("new holder's lock on %d masters after the stale release; want a majority", held)
	}
	if err := le2.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
