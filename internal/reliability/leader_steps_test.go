package reliability

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/reliability/faults"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/job"
)

// stepEvery is the stepper's pause between two steps of leader work.
const stepEvery = 50 * time.Millisecond

// slowLossLog is a log handler that takes lossLogDelay over every error
// record (a lock lost while held is logged at Error before the lease's
// context is cancelled). It stands for a busy process: the time between
// the lease's deadline and its context's cancellation, which a step loop
// that reads only the context's Done channel cannot see through, becomes
// long enough that the control run shows it every time.
type slowLossLog struct{}

const lossLogDelay = 300 * time.Millisecond

func (slowLossLog) Enabled(context.Context, slog.Level) bool { return true }
func (slowLossLog) WithAttrs([]slog.Attr) slog.Handler       { return slowLossLog{} }
func (slowLossLog) WithGroup(string) slog.Handler            { return slowLossLog{} }
func (slowLossLog) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError {
		time.Sleep(lossLogDelay)
	}
	return nil
}

// childStepper campaigns for leadership of LT_KEY and, while it leads,
// takes a step of leader work every stepEvery. Before each step it reads
// the clock and then checks what LT_CHECKS names:
//
//	all   the term context's Err, Elector.IsLeader and the lease's Lost
//	done  only whether the term context's Done channel is closed (the
//	      control: a loop that never asks)
//
// It prints "STEP <unix µs>" with the time read before the checks, and
// "ENDED <cause>" with context.Cause of the term's context once a check
// stops it. It quits when its stdin closes or says "quit".
func childStepper() {
	e := readChildEnv()
	checks := os.Getenv("LT_CHECKS")
	lk := e.locker(locker.WithLogger(slog.New(slowLossLog{})))
	el, err := job.NewElector(lk, e.key, job.WithRetryDelay(50*time.Millisecond))
	if err != nil {
		say("FAILED %v", err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = el.Run(ctx, func(tctx context.Context, _ job.Term) error {
			le := locker.FromContext(tctx)
			for {
				at := time.Now()
				var stop bool
				switch checks {
				case "all":
					stop = tctx.Err() != nil || !el.IsLeader() || le.Lost()
				default:
					select {
					case <-tctx.Done():
						stop = true
					default:
					}
				}
				if stop {
					<-tctx.Done()
					say("ENDED %v", context.Cause(tctx))
					return nil
				}
				say("STEP %d", at.UnixMicro())
				time.Sleep(stepEvery) // the step's work
			}
		})
	}()
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() && sc.Text() != "quit" {
	}
	cancel()
	<-done
}

// TestLeaderResumesWithoutStepping: a leader (watchdog lease 2 s) that
// checks its term's context, IsLeader and the lease's Lost before each
// 50 ms step is SIGSTOPped for 3.5 s, long enough for a rival process to
// be elected, and then continued. It takes no step after it resumes, and
// its term's context ends with cause locker.ErrLockLost, in every pause
// (several leaders paused at once, each with its own rival and name). The
// control leaders check only their context's Done channel: each takes
// steps after it resumes, in the time between the deadline and the
// cancellation that its timers bring — the window the checks close.
func TestLeaderResumesWithoutStepping(t *testing.T) {
	if testing.Short() {
		t.Skip("pauses processes for 3.5 s")
	}
	srv := redistest.Start(t)
	const lease, pause = 2 * time.Second, 3500 * time.Millisecond
	const checked, controls = 6, 2
	for i := range checked + controls {
		checks := "all"
		if i >= checked {
			checks = "done"
		}
		t.Run(fmt.Sprintf("%s-%d", checks, i), func(t *testing.T) {
			t.Parallel()
			name := fmt.Sprintf("leader:steps-%d", i)
			e := childEnv{addr: srv.Addr(), key: name, lease: lease, renew: lease / 3}
			leader := faults.StartChild(t, "stepper", append(e.env(), "LT_CHECKS="+checks)...)
			tr := new(transcript)
			tr.listen(0, leader)
			tr.await(t, 30*time.Second, "STEP", anyChild)
			rival := faults.StartChild(t, "candidate", e.env()...)
			tr.listen(1, rival)
			eventually(t, 30*time.Second, "the rival queued", func() bool {
				q, _ := redis.Int(srv.Do("ZCARD", "locktag:{"+name+"}:q"))
				return q == 1
			})

			leader.Stop()
			stopped := time.Now()
			tr.await(t, 20*time.Second, "LEADER", func(i int) bool { return i == 1 })
			elected := time.Since(stopped)
			time.Sleep(pause - elected) // the fault: the pause lasts 3.5 s
			resumed := time.Now()
			leader.Cont()
			ended := tr.await(t, 20*time.Second, "ENDED", func(i int) bool { return i == 0 }).text

			var after []time.Duration
			for {
				l, ok := tr.take("STEP", func(i int) bool { return i == 0 })
				if !ok {
					break
				}
				us, err := strconv.ParseInt(l.text, 10, 64)
				if err != nil {
					t.Fatalf("a step line %q", l.text)
				}
				if at := time.UnixMicro(us); !at.Before(resumed) {
					after = append(after, at.Sub(resumed))
				}
			}
			t.Logf("%s: the rival led %v into the pause; after the resume the leader took %d steps %v and ended with %q",
				checks, elected.Round(time.Millisecond), len(after), after, ended)
			if checks == "done" {
				if len(after) == 0 {
					t.Fatal("control: a leader that reads only its Done channel took no step after the resume; the test cannot tell a stale check")
				}
				return
			}
			if len(after) > 0 {
				t.Errorf("the resumed leader took %d steps after the resume (at %v), with its lease over", len(after), after)
			}
			if !strings.HasPrefix(ended, locker.ErrLockLost.Error()) {
				t.Errorf("the term's context ended with cause %q, want %v", ended, locker.ErrLockLost)
			}
			leader.Send("quit")
			rival.Send("quit")
		})
	}
}
