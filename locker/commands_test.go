package locker_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
)

// Command budgets, counted as Redis counts them (INFO commandstats: each
// EVALSHA, and every command a script runs): the uncontended lock+unlock
// of a mutex, and one acquisition of a hot key (hold 1ms, think 5ms, 16
// workers), with everything it takes: the tries, the queue, the hand-over,
// the grantee's confirming renewal, the channel subscriptions.
const (
	budgetPair      = 5
	budgetContended = 12
	// Redlock over 5 masters: the pair is 7 commands on each master
	// (EVALSHA, TIME, GET of the last token, SET; EVALSHA, GETDEL, SET of
	// the last token), whether the call may wait or not; a contended
	// acquisition in one process about the same, since its waiters take
	// turns (one try each).
	budgetRedlockPair      = 35
	budgetRedlockContended = 45
)

// TestCommandsPerOperation counts the Redis commands per operation of
// every lock kind (docs/benchmarks.md, "Redis commands per operation",
// lists what it logs) and holds the mutex's to their budgets. Counts, not
// times: a loaded machine changes the contended figure a little (how
// often a waiter re-checks), not the uncontended ones.
func TestCommandsPerOperation(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a contended workload")
	}
	srv := redistest.Start(t)
	srvs := []*redistest.Server{srv}
	lk := newLocker(t, srv)
	ctx := context.Background()
	pair := func(p locker.Params, key func(i int) string) func(i int) error {
		return func(i int) error {
			le, err := lk.Obtain(ctx, key(i), p)
			if err != nil {
				return err
			}
			return le.Release(ctx)
		}
	}
	own := func(int) string { return "own" }
	fresh := func(i int) string { return "fresh:" + strconv.Itoa(i) }
	p := locker.Params{TTL: 10 * time.Second}
	rows := []struct {
		name string
		n    int
		op   func(i int) error
	}{
		{"mutex pair, one key", 500, pair(p, own)},
		{"mutex pair, a new key each", 500, pair(p, fresh)},
		{"mutex pair, labelled", 500, pair(locker.Params{TTL: 10 * time.Second, Label: "job 7"}, own)},
		{"semaphore pair (limit 4)", 500, pair(locker.Params{TTL: 10 * time.Second, Limit: 4}, own)},
		{"read pair", 500, pair(locker.Params{TTL: 10 * time.Second, Mode: locker.Read}, own)},
		{"write pair", 500, pair(locker.Params{TTL: 10 * time.Second, Mode: locker.Write}, own)},
		{"multi-key pair (2 keys)", 500, func(i int) error {
			le, err := lk.ObtainMany(ctx, []string{"m1", "m2"}, p)
			if err != nil {
				return err
			}
			return le.Release(ctx)
		}},
	}
	for _, r := range rows {
		if err := r.op(r.n); err != nil { // warm-up: scripts loaded, control channel subscribed
			t.Fatalf("%s: %v", r.name, err)
		}
		per, by := commandsPer(t, srvs, r.n, func() {
			for i := range r.n {
				if err := r.op(i); err != nil {
					t.Fatalf("%s: %v", r.name, err)
				}
			}
		})
		t.Logf("%-28s %5.2f commands: %s", r.name, per, by)
		if r.name == "mutex pair, one key" && per > budgetPair {
			t.Errorf("%s: %.2f commands, budget %d", r.name, per, budgetPair)
		}
	}

	acq, per, by := contended(t, srvs, lk, "hot", 16, 20)
	t.Logf("%-28s %5.2f commands per acquisition (%d): %s", "contended, 16 workers", per, acq, by)
	if per > budgetContended {
		t.Errorf("contended: %.2f commands per acquisition, budget %d", per, budgetContended)
	}
}

// TestCommandsRedlock counts the commands per operation of a Redlock
// Locker over 5 masters, summed over the masters.
func TestCommandsRedlock(t *testing.T) {
	if testing.Short() {
		t.Skip("five servers and a contended workload")
	}
	srvs := redistest.StartN(t, 5)
	lk := newRedlock(t, srvs)
	ctx := context.Background()
	for _, r := range []struct {
		name string
		p    locker.Params
	}{
		{"Redlock pair", locker.Params{TTL: 10 * time.Second}},
		{"Redlock pair, may wait", locker.Params{TTL: 10 * time.Second, Wait: 10 * time.Second}},
	} {
		pair := func() {
			le, err := lk.Obtain(ctx, "own", r.p)
			if err != nil {
				t.Fatal(err)
			}
			if err := le.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
		pair() // warm-up
		per, by := commandsPer(t, srvs, 200, func() {
			for range 200 {
				pair()
			}
		})
		t.Logf("%-28s %5.2f commands: %s", r.name, per, by)
		if per > budgetRedlockPair {
			t.Errorf("%s: %.2f commands, budget %d", r.name, per, budgetRedlockPair)
		}
	}
	acq, per, by := contended(t, srvs, lk, "hot", 16, 10)
	t.Logf("%-28s %5.2f commands per acquisition (%d): %s", "Redlock contended, 16", per, acq, by)
	if per > budgetRedlockContended {
		t.Errorf("Redlock contended: %.2f commands per acquisition, budget %d", per, budgetRedlockContended)
	}
}

// contended runs workers goroutines that each take key rounds times
// (wait 10s, hold 1ms, think 5ms) and returns the acquisitions and the
// commands per acquisition.
func contended(t *testing.T, srvs []*redistest.Server, lk *locker.Locker, key string, workers, rounds int) (int, float64, string) {
	t.Helper()
	ctx := context.Background()
	n := workers * rounds
	per, by := commandsPer(t, srvs, n, func() {
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for range rounds {
					le, err := lk.Obtain(ctx, key, locker.Params{TTL: 10 * time.Second, Wait: 10 * time.Second})
					if err != nil {
						t.Error(err)
						return
					}
					time.Sleep(time.Millisecond) // the work: hold 1ms
					if err := le.Release(ctx); err != nil {
						t.Error(err)
					}
					time.Sleep(5 * time.Millisecond) // think 5ms
				}
			})
		}
		wg.Wait()
	})
	return n, per, by
}

// commandsPer runs work (n operations) and returns the commands the
// servers ran per operation, and how many of each, most first.
func commandsPer(t *testing.T, srvs []*redistest.Server, n int, work func()) (float64, string) {
	t.Helper()
	before := commandStats(t, srvs)
	work()
	after := commandStats(t, srvs)
	total := 0
	per := map[string]float64{}
	for cmd, c := range after {
		if d := c - before[cmd]; d > 0 {
			total += d
			per[cmd] = float64(d) / float64(n)
		}
	}
	names := slices.SortedFunc(maps.Keys(per), func(a, b string) int {
		if per[a] != per[b] {
			if per[a] > per[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	var b strings.Builder
	for _, name := range names {
		fmt.Fprintf(&b, "%s %.2f, ", name, per[name])
	}
	return float64(total) / float64(n), strings.TrimSuffix(b.String(), ", ")
}

// commandStats sums INFO commandstats' successful calls per command over
// srvs, without INFO itself.
func commandStats(t *testing.T, srvs []*redistest.Server) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, s := range srvs {
		info, err := redis.String(s.Do("INFO", "commandstats"))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(info, "\n") {
			name, _, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":")
			if !ok || !strings.HasPrefix(line, "cmdstat_") || name == "info" {
				continue
			}
			out[name] += commandCalls(info, name)
		}
	}
	return out
}
