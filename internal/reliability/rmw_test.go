package reliability

import (
	"bufio"
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/reliability/faults"
	"github.com/locktag/locktag/locker"
)

// childIncrementer does read-modify-write increments of the store's counter
// under the lock (a watchdog lease), stepped by its stdin so that the test
// can interleave holders. It prints "READY" and waits for "start"; then, for
// each of LT_ITERS sections, it takes the lock and prints "HELD token",
// reads the counter and prints "READ token value" (or "READ stale"), waits
// for "write", writes value+1 with a context that ignores the lease (a
// careless holder) and prints "WROTE ok value+1" or "WROTE stale" (or
// "WROTE error ..."), releases and prints "RELEASED ok|not-held|error". At
// the end it prints "DONE".
func childIncrementer() {
	e := readChildEnv()
	lk := e.locker()
	ctx := context.Background()
	st := newRemoteStore(e.store)
	sc := bufio.NewScanner(os.Stdin)
	await := func(cmd string) {
		for sc.Scan() {
			if sc.Text() == cmd {
				return
			}
		}
		os.Exit(1) // stdin closed: the test is gone
	}
	say("READY")
	await("start")
	for range e.iters {
		le, err := lk.Obtain(ctx, e.key, locker.Params{Wait: e.wait})
		if err != nil {
			say("FAILED obtain: %v", err)
			return
		}
		say("HELD %d", le.Token())
		v, err := st.Read(ctx, e.key, le.Token())
		switch {
		case err == nil:
			say("READ %d %d", le.Token(), v)
			await("write")
			switch err := st.Write(ctx, e.key, le.Token(), v, v+1); {
			case err == nil:
				say("WROTE ok %d", v+1)
			case errors.Is(err, errStale):
				say("WROTE stale")
			default:
				say("WROTE error %v", err)
			}
		case errors.Is(err, errStale):
			say("READ stale")
		default:
			say("FAILED read: %v", err)
			return
		}
		switch err := le.Release(ctx); {
		case err == nil:
			say("RELEASED ok")
		case errors.Is(err, locker.ErrNotHeld):
			say("RELEASED not-held")
		default:
			say("RELEASED error %v", err)
		}
	}
	say("DONE")
}

// childLine is one line of one child's output.
type childLine struct {
	child int
	line  string
}

// rmwResult is what one run of the read-modify-write fault test measured.
type rmwResult struct {
	sections  int   // sections the children ran
	faults    int   // holders paused between their read and their write
	acked     int64 // increments the store acknowledged (WROTE ok)
	refused   int   // writes refused as stale (WROTE stale)
	staleRead int   // reads refused as stale
	victims   []string
	value     int64 // the counter at the end
	dupes     int   // acknowledged values written more than once
	storeLost int64 // the store's count of writes over a value other than the one read
	writes    int64 // writes the store applied
}

func (r rmwResult) lostUpdates() int64 { return r.acked - r.value }

// runRMW runs children incrementers on one counter in a store fenced as
// mode, and pauses a holder between its read and its write at each read
// number in pauseAt (ascending; or at the first read after it at which
// another child can still take the lock). The holder is SIGSTOPped right
// after it printed READ (it waits for "write" then, so it is frozen
// between its read and its write) and stays stopped past its lease: until
// another holder has taken the lock and read the counter. Then the test
// SIGCONTs the paused holder and lets it write, and only after its write
// lets the other holder write. That is the interleaving in which write-only
// fencing loses an update: the paused holder's token is larger than the
// last write's, so its write is admitted, and the other holder's write,
// larger still, overwrites it.
func runRMW(t *testing.T, srv *redistest.Server, mode fencing, children, iters int, lease time.Duration, pauseAt []int) rmwResult {
	t.Helper()
	st := newFencedStore(mode)
	url := st.serve(t)
	key := "rmw-" + mode.String()
	const step = 10 * time.Second // bound on any one step; a run takes a few seconds

	chs := make([]*faults.Child, children)
	for i := range chs {
		chs[i] = faults.StartChild(t, "incrementer", childEnv{addr: srv.Addr(), store: url, key: key,
			client: strconv.Itoa(i), iters: iters, wait: time.Minute, lease: lease, renew: lease / 5}.env()...)
	}
	for _, ch := range chs {
		ch.Expect("READY", 30*time.Second)
	}
	// Room for every line the children print, so that no forwarder blocks
	// if the test stops early.
	lines := make(chan childLine, children*(5*iters+2))
	for i, ch := range chs {
		go func() {
			for l := range ch.Lines() {
				lines <- childLine{i, l}
			}
		}()
		ch.Send("start")
	}

	var r rmwResult
	values := map[int64]int{}
	left := make([]int, children) // sections each child has not finished
	for i := range left {
		left[i] = iters
	}
	reads, done := 0, 0
	victim, other := -1, -1 // the paused holder; the holder that read after it
	for done < children {
		var ev childLine
		select {
		case ev = <-lines:
		case <-time.After(step):
			t.Fatalf("no progress from the children within %v (paused %d, other %d)", step, victim, other)
		}
		word, rest, _ := strings.Cut(ev.line, " ")
		switch word {
		case "READ":
			if rest == "stale" {
				r.staleRead++
				left[ev.child]--
				continue
			}
			reads++
			switch {
			case victim >= 0 && other < 0:
				// Another holder has the lock and has read the counter the
				// paused holder read: resume the paused holder, let it write
				// first, and hold this one at its read.
				other = ev.child
				chs[victim].Cont()
				chs[victim].Send("write")
			case victim < 0 && r.faults < len(pauseAt) && reads >= pauseAt[r.faults] && othersLeft(left, ev.child):
				victim = ev.child
				chs[victim].Stop() // frozen between its read and its write, past its lease
				r.faults++
				r.victims = append(r.victims, "")
			default:
				chs[ev.child].Send("write")
			}
		case "WROTE":
			left[ev.child]--
			r.sections++
			if v, ok := strings.CutPrefix(rest, "ok "); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					t.Fatalf("child %d: %q", ev.child, ev.line)
				}
				r.acked++
				values[n]++
			} else if rest == "stale" {
				r.refused++
			} else {
				t.Fatalf("child %d: %q", ev.child, ev.line)
			}
			if ev.child == victim && other >= 0 {
				outcome, _, _ := strings.Cut(rest, " ")
				r.victims[len(r.victims)-1] = outcome
				chs[other].Send("write")
				victim, other = -1, -1
			}
		case "DONE":
			done++
		case "FAILED":
			t.Fatalf("child %d: %q; stderr: %s", ev.child, ev.line, chs[ev.child].Stderr())
		}
	}
	for _, n := range values {
		r.dupes += n - 1
	}
	r.value, r.writes, r.storeLost, _ = st.stats(key)
	return r
}

// othersLeft reports whether a child other than c will take the lock again
// while c is paused. Lines of different children can arrive out of order,
// so a child's last WROTE may not have been counted yet: it needs two
// sections left.
func othersLeft(left []int, c int) bool {
	for i, n := range left {
		if i != c && n >= 2 {
			return true
		}
	}
	return false
}

// TestPausedReadModifyWrite: child processes increment one counter by
// read-modify-write under a watchdog lock, and holders are SIGSTOPped
// between their read and their write, past their lease, while another
// holder takes the lock and reads (see runRMW for the interleaving).
//
// The control run fences only the writes (locker.Fence.Admit, the recipe
// UPDATE ... WHERE fence < $token): every pause must lose an update — the
// final counter falls short of the acknowledged increments and a value is
// written twice — which shows the detector works. The run with the recipe
// (Claim before the read, Check with the write) must lose none: each
// paused holder's write is refused as stale.
func TestPausedReadModifyWrite(t *testing.T) {
	srv := redistest.Start(t)
	const children, iters, lease = 3, 6, 400 * time.Millisecond
	pauseAt := []int{2, 7, 12} // reads (of 18) after which a holder is paused
	for _, tt := range []struct {
		mode fencing
		lose bool
	}{
		{writeFenced, true},
		{claimFenced, false},
	} {
		t.Run(tt.mode.String(), func(t *testing.T) {
			start := time.Now()
			r := runRMW(t, srv, tt.mode, children, iters, lease, pauseAt)
			t.Logf("%v: %d sections, %d paused (their writes: %q), %d increments acknowledged, %d refused, %d reads refused; counter %d: %d lost updates, %d values written twice, store saw %d writes over a changed value; %v",
				tt.mode, r.sections, r.faults, r.victims, r.acked, r.refused, r.staleRead, r.value, r.lostUpdates(), r.dupes, r.storeLost, time.Since(start).Round(time.Millisecond))
			if r.faults != len(pauseAt) {
				t.Fatalf("%d holders paused, want %d", r.faults, len(pauseAt))
			}
			if r.sections+r.staleRead != children*iters || r.writes != r.acked {
				t.Fatalf("%d sections and %d refused reads, want %d; store applied %d writes, children were told %d",
					r.sections, r.staleRead, children*iters, r.writes, r.acked)
			}
			if tt.lose {
				for _, w := range r.victims {
					if w != "ok" {
						t.Fatalf("control: a paused holder's write was %q, want it admitted", w)
					}
				}
				if r.lostUpdates() < int64(r.faults) || r.dupes < r.faults || r.storeLost < int64(r.faults) {
					t.Fatalf("control with write-only fencing: %d lost updates, %d duplicate values, store saw %d; want at least %d of each",
						r.lostUpdates(), r.dupes, r.storeLost, r.faults)
				}
				return
			}
			for _, w := range r.victims {
				if w != "stale" {
					t.Fatalf("a paused holder's write was %q, want it refused as stale", w)
				}
			}
			if r.lostUpdates() != 0 || r.dupes != 0 || r.storeLost != 0 {
				t.Fatalf("%d lost updates, %d duplicate values, store saw %d writes over a changed value; want none",
					r.lostUpdates(), r.dupes, r.storeLost)
			}
		})
	}
}
