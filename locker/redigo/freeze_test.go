package redigo_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/redigo"
)

// TestFrozenServer: Redis is frozen (SIGSTOP) for 4.5s while callers keep
// calling with 1s deadlines, then thawed; every call made after the thaw
// succeeds within its deadline, through the pipelined connection as through
// pooled calls.
func TestFrozenServer(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []redigo.Option
	}{
		{"pipelined", nil},
		{"pooled", []redigo.Option{redigo.WithPipelining(0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			d := redigo.New(srv.Pool(t), tc.opts...)
			t.Cleanup(func() { _ = d.(interface{ Close() error }).Close() })
			script := driver.NewScript("return 1")
			call := func() (time.Time, time.Duration, error) {
				start := time.Now()
				ctx := &deadlineCtx{Context: context.Background(), dl: start.Add(time.Second)}
				v, err := d.Eval(ctx, script, driver.Keys{})
				if err == nil && v != int64(1) {
					err = fmt.Errorf("reply %v, want 1", v)
				}
				return start, time.Since(start), err
			}
			if _, _, err := call(); err != nil {
				t.Fatal(err)
			}

			type result struct {
				start time.Time
				took  time.Duration
				err   error
			}
			var (
				mu      sync.Mutex
				results []result
				thawed  time.Time // zero until the thaw
				stop    = make(chan struct{})
				wg      sync.WaitGroup
			)
			for range 4 {
				wg.Go(func() {
					for {
						select {
						case <-stop:
							return
						default:
						}
						start, took, err := call()
						mu.Lock()
						results = append(results, result{start, took, err})
						mu.Unlock()
						time.Sleep(5 * time.Millisecond) // pacing, not synchronisation
					}
				})
			}
			time.Sleep(100 * time.Millisecond) // calls flow before the freeze
			srv.Freeze()
			time.Sleep(4500 * time.Millisecond) // the pause under test
			mu.Lock()
			thawed = time.Now()
			mu.Unlock()
			srv.Thaw()
			time.Sleep(3 * time.Second) // calls flow after the thaw
			close(stop)
			wg.Wait()

			var after, failed int
			for _, r := range results {
				if r.start.Before(thawed) {
					continue
				}
				after++
				if r.err != nil {
					failed++
					t.Errorf("call started %v after the thaw failed after %v: %v",
						r.start.Sub(thawed).Round(time.Millisecond), r.took.Round(time.Millisecond), r.err)
				}
			}
			if after == 0 {
				t.Fatal("no call was made after the thaw")
			}
			t.Logf("%d calls after the thaw, %d failed", after, failed)
		})
	}
}
