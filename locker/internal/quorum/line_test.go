package quorum

import (
	"strconv"
	"testing"
	"time"

	"github.com/locktag/locktag/locker/internal/hub"
)

// TestLineTurns: the first call leads, the next leads when it leaves, and
// knows whether the lock is held here; a release here wakes the leader.
func TestLineTurns(t *testing.T) {
	var ls lines
	a := ls.enter("k", hub.NewWaiter("a"))
	b := ls.enter("k", hub.NewWaiter("b"))
	c := ls.enter("k", hub.NewWaiter("c"))
	leads := func(tn *turn) bool {
		select {
		case <-tn.lead:
			return true
		default:
			return false
		}
	}
	if !leads(a) || leads(b) || leads(c) {
		t.Fatal("only the first call leads")
	}
	ls.leave("k", a, "a", true, time.Now().Add(time.Minute))
	if !leads(b) || !b.held || leads(c) {
		t.Fatalf("b leads (%v) knowing the lock held here (%v); c waits", leads(b), b.held)
	}
	ls.freed("k", "a")
	select {
	case <-b.w.Check:
	default:
		t.Fatal("the release did not wake the leader")
	}
	ls.leave("k", b, "b", false, time.Time{})
	if !leads(c) || c.held {
		t.Fatalf("c leads (%v), the lock not held here (held %v)", leads(c), c.held)
	}
	ls.leave("k", c, "c", false, time.Time{})
	if len(ls.m) != 0 {
		t.Fatalf("%d lines left", len(ls.m))
	}
}

// TestLineSweep: lines of leases obtained and never released go once their
// leases are over; a held one stays until its release.
func TestLineSweep(t *testing.T) {
	var ls lines
	held := ls.enter("held", hub.NewWaiter("h"))
	ls.leave("held", held, "h", true, time.Now().Add(time.Minute))
	for i := range 300 {
		ch := strconv.Itoa(i)
		tn := ls.enter(ch, hub.NewWaiter(ch))
		ls.leave(ch, tn, ch, true, time.Now().Add(time.Minute))
		ls.m[ch].until = time.Now().Add(-time.Millisecond) // its lease ran out, never released
	}
	if len(ls.m) > 260 {
		t.Fatalf("%d lines kept, most of them over", len(ls.m))
	}
	if ls.m["held"] == nil {
		t.Fatal("the held lock's line was dropped")
	}
	ls.freed("held", "h")
	if ls.m["held"] != nil {
		t.Fatal("the released lock's line was kept")
	}
}
