package reliability

import (
	"context"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/reliability/faults"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/job"
)

// childTerminee is a service as the docs lay one out: a Locker made in
// main with its Close deferred (LT_CLOSE=true; false: the process exits
// without it), a handler-like holder of LT_KEY:lock that works until its
// lease's context ends and then releases, an elector for LT_KEY:leader in
// a goroutine, a job runner in the middle of a run of LT_KEY:job, and a
// waiter queued for LT_KEY:queued. The four run on contexts of their own,
// not on the signal's: only the Locker's Close tells them to stop. It
// prints "READY" when all four are in place and returns from main on
// SIGTERM.
func childTerminee() {
	e := readChildEnv()
	closeOnExit, _ := strconv.ParseBool(os.Getenv("LT_CLOSE"))
	sig, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	ctx := context.Background()
	lk := e.locker()
	if closeOnExit {
		defer func() { _ = lk.Close() }()
	}
	le, err := lk.Obtain(ctx, e.key+":lock", locker.Params{})
	if err != nil {
		say("FAILED %v", err)
		return
	}
	go func() { // the handler: works until the lock's context ends
		<-le.Context().Done()
		_ = le.Release(context.Background())
	}()
	el, err := job.NewElector(lk, e.key+":leader")
	if err != nil {
		say("FAILED %v", err)
		return
	}
	led := make(chan struct{})
	go func() {
		_ = el.Run(ctx, func(tctx context.Context, _ job.Term) error {
			close(led)
			<-tctx.Done()
			return nil
		})
	}()
	<-led
	running := make(chan struct{})
	go func() {
		_ = job.Run(ctx, lk, e.key+":job", func(jctx context.Context, _ int64) error {
			close(running)
			<-jctx.Done() // a long run: it stops when its lock's context ends
			return context.Cause(jctx)
		})
	}()
	<-running
	go func() { _, _ = lk.Obtain(ctx, e.key+":queued", locker.Params{Wait: time.Minute}) }()
	say("READY")
	<-sig.Done()
}

// TestSIGTERMHandsOver: a process holding a lock, leading an election,
// running a job and queued for a fourth lock gets SIGTERM. With the Close
// that main defers, another process takes the lock, the leadership and the
// job within a fraction of the lease (5 s), and the queue entry is gone. The control exits without
// Close: the successor waits for the lease to run out.
func TestSIGTERMHandsOver(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a 5 s lease in the control")
	}
	srv := redistest.Start(t)
	const lease = 5 * time.Second
	for _, closeOnExit := range []bool{true, false} {
		t.Run("close="+strconv.FormatBool(closeOnExit), func(t *testing.T) {
			key := "term:" + strconv.FormatBool(closeOnExit)
			e := childEnv{addr: srv.Addr(), key: key, lease: lease, renew: lease / 3}
			child := faults.StartChild(t, "terminee", append(e.env(), "LT_CLOSE="+strconv.FormatBool(closeOnExit))...)
			child.Expect("READY", 30*time.Second)

			lk := e.locker()
			defer lk.Close()
			ctx := context.Background()
			tookLock := make(chan time.Time, 1)
			go func() {
				le, err := lk.Obtain(ctx, key+":lock", locker.Params{Wait: 3 * lease})
				if err != nil {
					t.Errorf("the successor's Obtain: %v", err)
					close(tookLock)
					return
				}
				tookLock <- time.Now()
				_ = le.Release(ctx)
			}()
			el, err := job.NewElector(lk, key+":leader")
			if err != nil {
				t.Fatal(err)
			}
			led := make(chan time.Time, 1)
			rctx, stopRun := context.WithCancel(ctx)
			defer stopRun()
			go func() {
				_ = el.Run(rctx, func(tctx context.Context, _ job.Term) error {
					led <- time.Now()
					<-tctx.Done()
					return nil
				})
			}()
			ranJob := make(chan time.Time, 1)
			go func() {
				err := job.Run(ctx, lk, key+":job", func(context.Context, int64) error {
					ranJob <- time.Now()
					return nil
				}, job.WithWait(3*lease))
				if err != nil {
					t.Errorf("the successor's job run: %v", err)
					close(ranJob)
				}
			}()
			eventually(t, 10*time.Second, "the successors queued", func() bool {
				a, _ := redis.Int(srv.Do("ZCARD", "locktag:{"+key+":lock}:q"))
				b, _ := redis.Int(srv.Do("ZCARD", "locktag:{"+key+":leader}:q"))
				c, _ := redis.Int(srv.Do("ZCARD", "locktag:{"+key+":job}:q"))
				return a == 1 && b == 1 && c == 1
			})

			sent := time.Now()
			child.Terminate()
			code := child.Wait(20 * time.Second)
			lockAt := within(t, 3*lease, "the lock's successor", tookLock)
			leadAt := within(t, 3*lease, "the new leader", led)
			jobAt := within(t, 3*lease, "the job's next run", ranJob)
			lockIn, leadIn, jobIn := lockAt.Sub(sent), leadAt.Sub(sent), jobAt.Sub(sent)
			queued, _ := redis.Int(srv.Do("ZCARD", "locktag:{"+key+":queued}:q"))
			t.Logf("close=%t: exit %d; after SIGTERM the lock changed hands in %v, the leadership in %v, the job in %v (lease %v); %d queue entries left",
				closeOnExit, code, lockIn.Round(time.Millisecond), leadIn.Round(time.Millisecond), jobIn.Round(time.Millisecond), lease, queued)
			if !closeOnExit {
				if lockIn < lease/2 || leadIn < lease/2 || jobIn < lease/2 {
					t.Fatalf("control: without Close the successors took over %v, %v and %v after SIGTERM, before the lease could run out", lockIn, leadIn, jobIn)
				}
				return
			}
			if lockIn > lease/2 || leadIn > lease/2 || jobIn > lease/2 {
				t.Fatalf("after Close the successors took over %v, %v and %v after SIGTERM; lease %v", lockIn, leadIn, jobIn, lease)
			}
			if queued != 0 {
				t.Fatalf("the terminated process left %d queue entries", queued)
			}
		})
	}
}
