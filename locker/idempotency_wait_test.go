package locker_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/redigo"
)

func TestIdempotentWait(t *testing.T) {
	for _, end := range []string{"complete", "abandon"} {
		t.Run(end, func(t *testing.T) {
			srv := redistest.Start(t)
			a, b := newLocker(t, srv), newLocker(t, srv)
			ctx := context.Background()
			c := mustClaim(t, a, "w", "fp", locker.IdempotencyParams{})
			type result struct {
				c   *locker.Claim
				err error
			}
			res := make(chan result, 2)
			for range 2 {
				go func() {
					c, err := b.Idempotent(ctx, "w", "fp", locker.IdempotencyParams{Wait: 10 * time.Second})
					res <- result{c, err}
				}()
			}
			waitingOn(t, srv, "w", 2)
			start := time.Now()
			if end == "complete" {
				if err := c.Complete(ctx, []byte("done")); err != nil {
					t.Fatal(err)
				}
				for range 2 {
					r := <-res
					wantReplay(t, r.c, r.err, "done")
				}
			} else {
				if err := c.Abandon(ctx); err != nil {
					t.Fatal(err)
				}
				// One waiter claims; the other waits for it and replays.
				r := <-res
				if r.err != nil {
					t.Fatal(r.err)
				}
				if _, replay := r.c.Replay(); replay {
					t.Fatal("first waiter replayed an abandoned key")
				}
				if err := r.c.Complete(ctx, []byte("second")); err != nil {
					t.Fatal(err)
				}
				r = <-res
				wantReplay(t, r.c, r.err, "second")
			}
			// Woken by a notice, not by the 30s lease's safety re-check.
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("waiters took %v", d)
			}
		})
	}
}

func TestIdempotentWaitEnds(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	mustClaim(t, lk, "busy", "fp", locker.IdempotencyParams{})
	_, err := lk.Idempotent(context.Background(), "busy", "fp", locker.IdempotencyParams{Wait: 50 * time.Millisecond})
	if !errors.Is(err, locker.ErrInFlight) {
		t.Fatalf("wait ran out: %v, want ErrInFlight", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = lk.Idempotent(ctx, "busy", "fp", locker.IdempotencyParams{Wait: 10 * time.Second})
	if !errors.Is(err, locker.ErrInFlight) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("deadline while waiting: %v, want ErrInFlight and DeadlineExceeded", err)
	}
}

func TestIdempotentUnavailable(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	srv.Stop()
	_, err := lk.Idempotent(context.Background(), "x", "fp", locker.IdempotencyParams{})
	if !errors.Is(err, locker.ErrUnavailable) {
		t.Fatalf("Redis down: %v, want ErrUnavailable", err)
	}
}

// TestIdempotentExactlyOnce: 50 concurrent callers of one key spread over
// five Lockers (separate pools, as five processes) → one execution; every
// other caller gets ErrInFlight or the identical replay, or with a wait,
// the replay. The control runs the same workload with no guard.
func TestIdempotentExactlyOnce(t *testing.T) {
	const procs, callers = 5, 50
	for _, tc := range []struct {
		name  string
		guard bool
		wait  time.Duration
	}{
		{"409 or replay", true, 0},
		{"wait and replay", true, 10 * time.Second},
		{"control: no guard", false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			lks := make([]*locker.Locker, procs)
			for i := range lks {
				lks[i] = newLocker(t, srv)
			}
			var executions, inFlight, replays atomic.Int64
			var start sync.WaitGroup
			start.Add(1)
			var wg sync.WaitGroup
			for i := range callers {
				wg.Go(func() {
					start.Wait()
					if !tc.guard {
						executions.Add(1)
						return
					}
					ctx := context.Background()
					c, err := lks[i%procs].Idempotent(ctx, "pay", "fp", locker.IdempotencyParams{Wait: tc.wait})
					switch {
					case errors.Is(err, locker.ErrInFlight):
						inFlight.Add(1)
					case err != nil:
						t.Error(err)
					default:
						if out, ok := c.Replay(); ok {
							if string(out) != "receipt" {
								t.Errorf("replay %q", out)
							}
							replays.Add(1)
							return
						}
						executions.Add(1)
						time.Sleep(20 * time.Millisecond) // the work; lets duplicates arrive meanwhile
						if err := c.Complete(ctx, []byte("receipt")); err != nil {
							t.Error(err)
						}
					}
				})
			}
			start.Done()
			wg.Wait()
			t.Logf("%d callers over %d lockers: %d executions, %d in flight, %d replays",
				callers, procs, executions.Load(), inFlight.Load(), replays.Load())
			switch {
			case !tc.guard && executions.Load() <= 1:
				t.Fatalf("control: %d executions; the counter cannot see a double execution", executions.Load())
			case tc.guard && executions.Load() != 1:
				t.Fatalf("%d executions, want exactly 1", executions.Load())
			case tc.guard && executions.Load()+inFlight.Load()+replays.Load() != callers:
				t.Fatal("outcomes do not add up")
			case tc.wait > 0 && replays.Load() != callers-1:
				t.Fatalf("%d replays with a wait, want %d", replays.Load(), callers-1)
			}
		})
	}
}

func TestIdempotencyName(t *testing.T) {
	a := locker.IdempotencyName("POST /a", "user:1", "k")
	for _, other := range []string{
		locker.IdempotencyName("POST /a", "user:1", "k2"),
		locker.IdempotencyName("POST /a", "user:2", "k"),
		locker.IdempotencyName("POST /b", "user:1", "k"),
		locker.IdempotencyName("POST /a", "user:1k", ""), // separators cannot be forged
		locker.IdempotencyName("POST /a", "", "user:1k"),
	} {
		if other == a {
			t.Fatalf("names collide: %s", a)
		}
	}
	if a != locker.IdempotencyName("POST /a", "user:1", "k") || !strings.HasPrefix(a, "idem:") || strings.ContainsAny(a, "{}") {
		t.Fatalf("name %q", a)
	}
}

// TestClaimSurvivesPoolExhaustion: request traffic holding every pooled
// connection must not starve an idempotency claim's renewals into losing a
// healthy in-flight marker (another request with the key would then run a
// second time), nor keep its Complete from storing the outcome — the same
// rule as for a lock's lease (TestRenewalSurvivesPoolExhaustion).
func TestClaimSurvivesPoolExhaustion(t *testing.T) {
	srv := redistest.Start(t)
	pool := srv.Pool(t)
	pool.MaxActive = 2
	lk := newLockerOn(t, redigo.New(pool, redigo.WithPipelining(0))) // pooled calls: the pool is what is exhausted
	ctx := context.Background()
	const lease = 300 * time.Millisecond
	c := mustClaim(t, lk, "starved", "fp", locker.IdempotencyParams{Lease: lease, TTL: time.Minute})
	busy := []redis.Conn{pool.Get(), pool.Get()} // the traffic: every connection taken
	defer func() {
		for _, b := range busy {
			b.Close()
		}
	}()
	if _, err := busy[0].Do("PING"); err != nil {
		t.Fatal(err)
	}
	if _, err := lk.Idempotent(ctx, "other", "fp", locker.IdempotencyParams{}); !errors.Is(err, locker.ErrPoolExhausted) {
		t.Fatalf("requests are not starved: %v", err)
	}
	select {
	case <-c.Context().Done():
		t.Fatalf("claim lost while the pool was exhausted: %v", context.Cause(c.Context()))
	case <-time.After(4 * lease):
	}
	if c.Lost() {
		t.Fatal("claim reports Lost")
	}
	if err := c.Complete(ctx, []byte("done")); err != nil {
		t.Fatalf("Complete with the pool exhausted: %v", err)
	}
	for _, b := range busy {
		b.Close()
	}
	busy = nil
	r, err := lk.Idempotent(ctx, "starved", "fp", locker.IdempotencyParams{})
	wantReplay(t, r, err, "done")
}
