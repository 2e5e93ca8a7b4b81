package reliability

import (
	"flag"
	"fmt"
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

var jobsFor = flag.Duration("jobs.for", 5*time.Second, "how long TestJobTicksAcrossProcesses schedules its guarded job (e.g. 30s); the controls run 2s")

// TestJobTicksAcrossProcesses: three processes schedule the same job every
// 100ms; one of them ticks 30ms late (its clock is behind). Each tick runs
// through job.RunAt with job.WithAtLeast(80ms) (and WithMisfire's default,
// 40ms): every tick runs exactly once and no two runs overlap, for
// -jobs.for (default 5s; 30s with -jobs.for=30s). A tick may go unrun only
// when every process reached it too late (ErrMisfired: stalled past the
// misfire margin) and skipped it; the test counts those and fails on any
// other. Two controls, 2s each, show the
// checks can fail: without the job's lock every tick runs about three
// times, overlapping; with the lock but without WithAtLeast the late
// process runs most ticks a second time (after the first run ended: no
// overlap, but a double run).
func TestJobTicksAcrossProcesses(t *testing.T) {
	srv := redistest.Start(t)
	const processes, period, skew = 3, 100 * time.Millisecond, 30 * time.Millisecond
	for _, tc := range []struct {
		name    string
		d       time.Duration
		guarded bool
		atLeast time.Duration
	}{
		{"at-least", *jobsFor, true, 80 * time.Millisecond},
		{"control-unguarded", 2 * time.Second, false, 0},
		{"control-without-at-least", 2 * time.Second, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "job:ticks:" + tc.name
			n := int(tc.d / period)
			kids := make([]*faults.Child, processes)
			for i := range kids {
				te := tickerEnv{ticks: n, period: period, atLeast: tc.atLeast, guarded: tc.guarded}
				if i == processes-1 {
					te.skew = skew
				}
				e := childEnv{addr: srv.Addr(), key: key}
				kids[i] = faults.StartChild(t, "ticker", append(e.env(), te.env()...)...)
			}
			for _, k := range kids {
				k.Expect("READY", 30*time.Second)
			}
			start := time.Now().Add(3 * period).Truncate(period)
			for _, k := range kids {
				k.Send(fmt.Sprintf("START %d", start.UnixMilli()))
			}
			var ran, skipped, late, failed int
			for _, k := range kids {
				var r, s, l, f int
				if _, err := fmt.Sscanf(k.Expect("DONE", tc.d+30*time.Second), "ran %d skipped %d late %d failed %d", &r, &s, &l, &f); err != nil {
					t.Fatal(err)
				}
				ran, skipped, late, failed = ran+r, skipped+s, late+l, failed+f
			}
			runs, err := redis.IntMap(srv.Do("HGETALL", key+":runs"))
			if err != nil {
				t.Fatal(err)
			}
			lates, err := redis.IntMap(srv.Do("HGETALL", key+":late"))
			if err != nil {
				t.Fatal(err)
			}
			overlaps, _ := redis.Int(srv.Do("GET", key+":overlaps"))
			var never, once, more, forfeit int
			var unrun []int
			for i := range n {
				switch runs[strconv.Itoa(i)] {
				case 0:
					never++
					unrun = append(unrun, i)
					// Forfeited: a process took this tick's lock too late,
					// or the previous tick's and held it into this one.
					if lates[strconv.Itoa(i)] > 0 || lates[strconv.Itoa(i-1)] > 0 {
						forfeit++
					}
				case 1:
					once++
				default:
					more++
				}
			}
			t.Logf("%d ticks over %v: %d runs (%.2f per tick), %d skipped (%d too late), %d failed; %d never run %v (%d forfeited by a late lock), %d once, %d more than once; %d overlapping",
				n, tc.d, ran, float64(ran)/float64(n), skipped+late, late, failed, never, unrun, forfeit, once, more, overlaps)
			switch tc.name {
			case "at-least":
				// A tick goes unrun only when a process that took its lock
				// (or the previous tick's, holding it into this one) got it
				// past WithMisfire (stalled) and skipped it.
				if more != 0 || never != forfeit || overlaps != 0 || failed != 0 {
					t.Fatalf("%d ticks never run (%d forfeited by a late lock), %d more than once, %d overlapping runs, %d failed; want each tick once", never, forfeit, more, overlaps, failed)
				}
			case "control-unguarded":
				if ran < 5*n/2 || overlaps == 0 {
					t.Fatalf("control: %d runs of %d ticks, %d overlapping without the lock; want about 3 per tick, overlapping", ran, n, overlaps)
				}
			default:
				if more < n/4 || overlaps != 0 {
					t.Fatalf("control: %d of %d ticks ran twice, %d overlapping, without WithAtLeast; want double runs (the late clock), none overlapping", more, n, overlaps)
				}
			}
		})
	}
}

// transcript collects the stdout lines of several children, so a test can
// wait for a line from any of them.
type transcript struct {
	mu    sync.Mutex
	lines []candidateLine
	used  []bool
}

type candidateLine struct {
	from int // the child's index
	text string
}

// listen collects the lines of children, numbered from first.
func (tr *transcript) listen(first int, children ...*faults.Child) {
	for i, c := range children {
		go func() {
			for l := range c.Lines() {
				tr.mu.Lock()
				tr.lines, tr.used = append(tr.lines, candidateLine{first + i, l}), append(tr.used, false)
				tr.mu.Unlock()
			}
		}()
	}
}

// take returns the first line not taken yet that starts with prefix and
// comes from a child for which from returns true, or ok false.
func (tr *transcript) take(prefix string, from func(int) bool) (l candidateLine, ok bool) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for i, l := range tr.lines {
		if !tr.used[i] && strings.HasPrefix(l.text, prefix) && from(l.from) {
			tr.used[i] = true
			return candidateLine{l.from, strings.TrimPrefix(strings.TrimPrefix(l.text, prefix), " ")}, true
		}
	}
	return candidateLine{}, false
}

// await waits up to within for take(prefix, from) to find a line.
func (tr *transcript) await(t *testing.T, within time.Duration, prefix string, from func(int) bool) candidateLine {
	t.Helper()
	var l candidateLine
	eventually(t, within, "a line "+prefix, func() bool {
		var ok bool
		l, ok = tr.take(prefix, from)
		return ok
	})
	return l
}

func anyChild(int) bool { return true }

// candidates starts n children campaigning for name with a watchdog lease
// renewed every lease/5, the first one alone first (so it leads), and
// waits until the others are queued. It returns the children and their
// transcript, and the leader's index and token.
func candidates(t *testing.T, srv *redistest.Server, n int, name string, lease time.Duration, storeURL string) ([]*faults.Child, *transcript, int64) {
	t.Helper()
	e := childEnv{addr: srv.Addr(), key: name, store: storeURL, lease: lease, renew: lease / 5}
	kids := []*faults.Child{faults.StartChild(t, "candidate", e.env()...)}
	tr := new(transcript)
	tr.listen(0, kids[0])
	l := tr.await(t, 30*time.Second, "LEADER", anyChild)
	token, err := strconv.ParseInt(l.text, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	tr.await(t, 10*time.Second, "READ", anyChild)
	for range n - 1 {
		kids = append(kids, faults.StartChild(t, "candidate", e.env()...))
	}
	tr.listen(1, kids[1:]...)
	eventually(t, 30*time.Second, "the other candidates queued", func() bool {
		q, _ := redis.Int(srv.Do("ZCARD", "locktag:{"+name+"}:q"))
		return q == n-1
	})
	return kids, tr, token
}

// TestLeaderKilled: three processes campaign for leadership; the leader is
// SIGKILLed (no resignation, no more renewals) and another process leads
// within the lease (plus slack for timers on a loaded machine), with a
// larger fencing token. The control keeps the leader alive: nobody else
// leads for as long, so it is the crash that hands leadership on.
func TestLeaderKilled(t *testing.T) {
	srv := redistest.Start(t)
	const lease, slack = time.Second, 1500 * time.Millisecond
	for _, kill := range []bool{true, false} {
		name := "leader:killed"
		if !kill {
			name += "-control"
		}
		t.Run(name, func(t *testing.T) {
			kids, tr, token := candidates(t, srv, 3, name, lease, "")
			if !kill {
				time.Sleep(lease + slack) // the leader lives on for the whole bound
				if l, ok := tr.take("LEADER", anyChild); ok {
					t.Fatalf("control: child %d led (%s) while the leader was alive", l.from, l.text)
				}
				return
			}
			killed := time.Now()
			kids[0].Kill()
			l := tr.await(t, 20*time.Second, "LEADER", anyChild)
			took := time.Since(killed)
			next, _ := strconv.ParseInt(l.text, 10, 64)
			t.Logf("child %d leads %v after the leader was killed (lease %v); token %d after %d", l.from, took.Round(time.Millisecond), lease, next, token)
			if took > lease+slack {
				t.Fatalf("a new leader after %v; lease %v", took, lease)
			}
			if next <= token {
				t.Fatalf("the new leader's token %d is not above the killed leader's %d", next, token)
			}
		})
	}
}

// TestLeaderPaused: the leader of three processes is SIGSTOPped for two
// leases (a long GC pause, a frozen VM). Another process leads meanwhile,
// claims the fenced store and writes. After SIGCONT the old leader's term
// context is cancelled with ErrLockLost, and its careless write — made
// with the old term's token, without looking at the context — is refused
// by the fenced store: no update is lost. The control uses a store
// without fencing: the same resumed write is applied and the store counts
// the lost update.
func TestLeaderPaused(t *testing.T) {
	srv := redistest.Start(t)
	const lease = 600 * time.Millisecond
	for _, fenced := range []bool{true, false} {
		t.Run(fmt.Sprintf("fenced=%t", fenced), func(t *testing.T) {
			name := fmt.Sprintf("leader:paused-%t", fenced)
			st := newStore(fenced)
			kids, tr, token := candidates(t, srv, 3, name, lease, st.serve(t))

			kids[0].Stop()
			stopped := time.Now()
			l := tr.await(t, 20*time.Second, "LEADER", anyChild)
			t.Logf("child %d leads %v after the leader was stopped (lease %v)", l.from, time.Since(stopped).Round(time.Millisecond), lease)
			if next, _ := strconv.ParseInt(l.text, 10, 64); next <= token {
				t.Fatalf("the new leader's token %d is not above the stopped leader's %d", next, token)
			}
			tr.await(t, 10*time.Second, "READ", func(i int) bool { return i == l.from })
			kids[l.from].Send("write")
			if w := tr.await(t, 10*time.Second, "WROTE", func(i int) bool { return i == l.from }).text; w != "ok" {
				t.Fatalf("the new leader's write: %s", w)
			}
			time.Sleep(2*lease - time.Since(stopped)) // the fault lasts two leases

			kids[0].Cont()
			kids[0].Send("write")
			old := func(i int) bool { return i == 0 }
			wrote := tr.await(t, 10*time.Second, "WROTE", old).text
			lost := tr.await(t, 10*time.Second, "LOST", old).text
			value, writes, lostUpdates, stale := st.stats(name)
			t.Logf("resumed leader: wrote %q, term ended with %q; store value %d, writes %d, lost %d, stale %d", wrote, lost, value, writes, lostUpdates, stale)
			if lost != locker.ErrLockLost.Error() {
				t.Errorf("the resumed leader's term ended with %q, want %q", lost, locker.ErrLockLost)
			}
			if fenced {
				if wrote != "stale" || lostUpdates != 0 || value != 1 {
					t.Fatalf("fenced: wrote %q, lost %d, value %d; want stale, 0, 1", wrote, lostUpdates, value)
				}
				return
			}
			if wrote != "ok" || lostUpdates != 1 {
				t.Fatalf("control: wrote %q, lost %d; want the stale write applied and counted as a lost update", wrote, lostUpdates)
			}
		})
	}
}
