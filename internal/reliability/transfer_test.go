package reliability

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
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
//
// With LT_GOROUTINES (a burst) it runs that many goroutines instead, all
// started when the parent sends "go" after READY, and counts the requests
// in flight across processes (from before ObtainMany to after Release) in
// Redis, keeping the most at once in "tr:max".
func childTransfers() {
	e := readChildEnv()
	lk := e.locker()
	pool := &redis.Pool{MaxIdle: 64, DialContext: func(ctx context.Context) (redis.Conn, error) {
		return redis.DialContext(ctx, "tcp", e.addr, redis.DialReadTimeout(5*time.Second), redis.DialWriteTimeout(5*time.Second))
	}}
	seed, _ := strconv.ParseUint(e.client, 10, 64)
	var mu sync.Mutex
	var net [transferAccounts]int64
	var wg sync.WaitGroup
	goroutines, _ := strconv.Atoi(os.Getenv(envGoroutines))
	burst := goroutines > 0
	if !burst {
		goroutines = 4
	}
	inFlight := func(s *redis.Script) {
		if !burst {
			return
		}
		c := pool.Get()
		defer c.Close()
		if _, err := s.Do(c, "tr:in", "tr:w", "tr:max", "tr:maxw", "tr:bad", "r"); err != nil {
			say("ERR in-flight count: %v", err)
		}
	}
	start := make(chan struct{})
	say("READY")
	for g := range goroutines {
		rng := rand.New(rand.NewPCG(seed, uint64(g)))
		wg.Go(func() {
			<-start
			for range e.iters {
				from, to := rng.IntN(transferAccounts), rng.IntN(transferAccounts)
				amount := int64(1 + rng.IntN(10))
				inFlight(occEnter)
				err := transfer(lk, pool, from, to, amount, e)
				inFlight(occLeave)
				if err != nil {
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
	if burst {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() && sc.Text() != "go" {
		}
	}
	close(start)
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

// envGoroutines names the variable that tells a "transfers" child how many
// goroutines to run.
const envGoroutines = "LT_GOROUTINES"

// transferPlan is a transfer run's size: processes, goroutines in each
// (0: 4), transfers per goroutine, and the Lockers' grant window and call
// timeout (0: the defaults).
type transferPlan struct {
	procs, goroutines, iters int
	window, call             time.Duration
}

// runTransfers starts, against srv, p.procs transfer processes (each with a key prefix
// from prefix(i)) and returns the overlaps seen, whether the balances
// are right (each the initial plus every process's net flow, and the
// total unchanged), and the processes' errors.
func runTransfers(t *testing.T, srv *redistest.Server, p transferPlan, prefix func(i int) string) (overlaps int, balanced bool, errs []string) {
	t.Helper()
	for i := range transferAccounts {
		if _, err := srv.Do("SET", balanceKey(i), transferInitial); err != nil {
			t.Fatal(err)
		}
	}
	children := make([]*faults.Child, p.procs)
	for i := range children {
		e := childEnv{addr: srv.Addr(), client: strconv.Itoa(i + 1), prefix: prefix(i),
			iters: p.iters, wait: 30 * time.Second, think: 300 * time.Microsecond, window: p.window, call: p.call}
		children[i] = faults.StartChild(t, "transfers", append(e.env(), envGoroutines+"="+strconv.Itoa(p.goroutines))...)
	}
	for _, ch := range children {
		ch.Expect("READY", 30*time.Second)
	}
	if p.goroutines > 0 {
		for _, ch := range children {
			ch.Send("go")
		}
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
	overlaps, balanced, errs := runTransfers(t, redistest.Start(t), transferPlan{procs: 3, iters: 40}, func(int) string { return "" })
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
	overlaps, balanced, errs := runTransfers(t, redistest.Start(t), transferPlan{procs: 3, iters: 40}, func(i int) string { return "broken" + strconv.Itoa(i) + ":" })
	for _, e := range errs {
		t.Error(e)
	}
	if overlaps == 0 {
		t.Fatalf("control: no overlap seen under a broken lock (balances right: %v)", balanced)
	}
	t.Logf("control: %d overlaps, balances right: %v", overlaps, balanced)
}

// TestTransfersBurst is the transfer workload at the flash-sale scale: 3
// processes of 350 goroutines each, started together, make 3 transfers
// each (3,150 in all) between the same 3 accounts, naming the two keys in
// random orders, so over a thousand multi-key requests are in flight at
// once (measured across processes in Redis). No deadlock (every process
// done within the bound, no wait ran out), no overlap on any account, no
// lost update, the total unchanged, no error at all (so none read as
// Redis unavailable), and nothing of the accounts' locks left held or
// queued. TestTransfersControl proves the detectors on the same workload.
func TestTransfersBurst(t *testing.T) {
	if testing.Short() {
		t.Skip("1,050 concurrent transfers over 3 processes")
	}
	const procs, goroutines, iters = 3, 350, 3
	srv := redistest.Start(t)
	start := time.Now()
	overlaps, balanced, errs := runTransfers(t, srv, transferPlan{procs: procs, goroutines: goroutines, iters: iters, window: burstWindow, call: burstCallTimeout}, func(int) string { return "" })
	peak, _ := redis.Int(srv.Do("GET", "tr:max"))
	t.Logf("%d transfers by %d goroutines over %d processes in %v; most in flight at once %d", procs*goroutines*iters, procs*goroutines, procs, time.Since(start).Round(time.Millisecond), peak)
	for _, e := range errs {
		t.Error(e)
	}
	if overlaps != 0 || !balanced {
		t.Fatalf("overlaps %d, balances right: %v", overlaps, balanced)
	}
	if peak < 1000 {
		t.Fatalf("at most %d transfers in flight at once, want over 1,000: the burst was not one", peak)
	}
	for a := range transferAccounts {
		if left := leftBehind(t, srv, "acct:"+strconv.Itoa(a)); len(left) != 0 {
			t.Errorf("account %d: left behind in Redis: %v", a, left)
		}
	}
}
