package reliability

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/reliability/faults"
	"github.com/locktag/locktag/locker"
)

// The transfer workload: accounts whose balances are plain Redis keys,
// moved between by read-modify-write under a multi-key lock of the two
// accounts (locker.ObtainMany), from several processes at once, in both
// directions.
const (
	transferAccounts = 3
	transferInitial  = 1000
)

func balanceKey(i int) string { return "bal:" + strconv.Itoa(i) }

// childTransfers runs LT_ITERS transfers on each of 4 goroutines and
// prints "NET n0 n1 n2" (what its transfers added to each account), the
// errors it met ("ERR ..."), then "DONE". Inside each transfer it counts
// itself in on both accounts (INCR in:<account>); a count above 1 is an
// overlap, counted in "overlaps".
func childTransfers() {
	e := readChildEnv()
	lk := e.locker()
	pool := &redis.Pool{MaxIdle: 8, DialContext: func(ctx context.Context) (redis.Conn, error) {
		return redis.DialContext(ctx, "tcp", e.addr, redis.DialReadTimeout(5*time.Second), redis.DialWriteTimeout(5*time.Second))
	}}
	seed, _ := strconv.ParseUint(e.client, 10, 64)
	var mu sync.Mutex
	var net [transferAccounts]int64
	var wg sync.WaitGroup
	say("READY")
	for g := range 4 {
		rng := rand.New(rand.NewPCG(seed, uint64(g)))
		wg.Go(func() {
			for range e.iters {
				from, to := rng.IntN(transferAccounts), rng.IntN(transferAccounts)
				amount := int64(1 + rng.IntN(10))
				if err := transfer(lk, pool, from, to, amount, e); err != nil {
					say("ERR %v", err)
					continue
				}
				mu.Lock()
				net[from] -= amount
				net[to] += amount
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	say("NET %d %d %d", net[0], net[1], net[2])
	say("DONE")
}

// transfer moves amount from one account to another under their lock.
func transfer(lk *locker.Locker, pool *redis.Pool, from, to int, amount int64, e childEnv) error {
	ctx := context.Background()
	// The keys in the caller's order: half the transfers name them the
	// other way round.
	le, err := lk.ObtainMany(ctx, []string{"acct:" + strconv.Itoa(from), "acct:" + strconv.Itoa(to)}, locker.Params{Wait: e.wait})
	if err != nil {
		return err
	}
	defer le.Release(ctx)
	c := pool.Get()
	defer c.Close()
	accts := []int{from}
	if to != from {
		accts = append(accts, to)
	}
	for _, a := range accts {
		if n, err := redis.Int(c.Do("INCR", "in:"+strconv.Itoa(a))); err != nil {
			return err
		} else if n > 1 {
			_, _ = c.Do("INCR", "overlaps")
		}
	}
	bf, err := redis.Int64(c.Do("GET", balanceKey(from)))
	if err != nil {
		return err
	}
	bt, err := redis.Int64(c.Do("GET", balanceKey(to)))
	if err != nil {
		return err
	}
	time.Sleep(e.think) // the work between the read and the write
	if from != to {
		if _, err := c.Do("SET", balanceKey(from), bf-amount); err != nil {
			return err
		}
		if _, err := c.Do("SET", balanceKey(to), bt+amount); err != nil {
			return err
		}
	}
	for _, a := range accts {
		if _, err := c.Do("DECR", "in:"+strconv.Itoa(a)); err != nil {
			return err
		}
	}
	return le.Context().Err() // a lock lost meanwhile voids the section
}

// runTransfers starts procs transfer processes (each with a key prefix
// from prefix(i)) and returns the overlaps seen, whether the balances
// are right (each the initial plus every process's net flow, and the
// total unchanged), and the processes' errors.
func runTransfers(t *testing.T, procs, iters int, prefix func(i int) string) (overlaps int, balanced bool, errs []string) {
	t.Helper()
	srv := redistest.Start(t)
	for i := range transferAccounts {
		if _, err := srv.Do("SET", balanceKey(i), transferInitial); err != nil {
			t.Fatal(err)
		}
	}
	children := make([]*faults.Child, procs)
	for i := range children {
		children[i] = faults.StartChild(t, "transfers", childEnv{addr: srv.Addr(), client: strconv.Itoa(i + 1), prefix: prefix(i),
			iters: iters, wait: 30 * time.Second, think: 300 * time.Microsecond}.env()...)
	}
	for _, ch := range children {
		ch.Expect("READY", 30*time.Second)
	}
	var want [transferAccounts]int64
	for i := range want {
		want[i] = transferInitial
	}
	// A deadlock would hold every process until the waits (30s) ran out:
	// the bound is generous for a loaded machine, and far below the sum of
	// those waits.
	deadline := time.Now().Add(2 * time.Minute)
	for i, ch := range children {
		for done := false; !done; {
			line, ok := ch.Next(time.Until(deadline))
			if !ok {
				t.Fatalf("process %d: no DONE within the bound (deadlock?); stderr: %s", i, ch.Stderr())
			}
			switch f := strings.Fields(line); {
			case f[0] == "NET":
				for a := range transferAccounts {
					n, _ := strconv.ParseInt(f[a+1], 10, 64)
					want[a] += n
				}
			case f[0] == "ERR":
				errs = append(errs, fmt.Sprintf("process %d: %s", i, line))
			case f[0] == "DONE":
				done = true
			}
		}
	}
	overlaps, _ = redis.Int(srv.Do("GET", "overlaps"))
	balanced = true
	var total int64
	for a := range transferAccounts {
		got, err := redis.Int64(srv.Do("GET", balanceKey(a)))
		if err != nil {
			t.Fatal(err)
		}
		total += got
		if got != want[a] {
			t.Logf("account %d: balance %d, want %d", a, got, want[a])
			balanced = false
		}
	}
	if total != transferAccounts*transferInitial {
		t.Logf("total %d, want %d", total, transferAccounts*transferInitial)
		balanced = false
	}
	return overlaps, balanced, errs
}

// TestTransfersAcrossProcesses: 3 processes, 4 goroutines each, transfer
// between 3 accounts in both directions (and to the same account) under
// multi-key locks: no deadlock (all done within the bound, no wait ran
// out), no overlap on any account, no lost update, total unchanged.
func TestTransfersAcrossProcesses(t *testing.T) {
	overlaps, balanced, errs := runTransfers(t, 3, 40, func(int) string { return "" })
	for _, e := range errs {
		t.Error(e)
	}
	if overlaps != 0 || !balanced {
		t.Fatalf("overlaps %d, balances right: %v", overlaps, balanced)
	}
}

// TestTransfersControl breaks the lock — each process with a key prefix
// of its own, so no two share a lock — and asserts that the detectors
// catch it: overlaps are seen, or balances are wrong.
func TestTransfersControl(t *testing.T) {
	overlaps, balanced, errs := runTransfers(t, 3, 40, func(i int) string { return "broken" + strconv.Itoa(i) + ":" })
	for _, e := range errs {
		t.Error(e)
	}
	if overlaps == 0 {
		t.Fatalf("control: no overlap seen under a broken lock (balances right: %v)", balanced)
	}
	t.Logf("control: %d overlaps, balances right: %v", overlaps, balanced)
}
