package backend

import (
	"fmt"
	"sync"
	"time"

	"github.com/locktag/locktag/locker/internal/lockerr"
)

// Clock compares the readings of the server's clock that replies carry (a
// free mutex's fencing token, a renewal's time) with the process's
// monotonic clock. Each reading comes with the window it was taken in:
// sent before the call, received after. Between two readings the server's
// clock must have moved by the local time between them, give or take the
// two windows, the tolerance and a drift of 0.1% of the time between
// them. A reading behind that is a step back: Observe refuses it, and
// every later reading until one is past where the server's clock had
// reached before the step (at least the last reading plus the local time
// since): tokens minted from then on are above every earlier one again,
// and the readings start afresh. A reading ahead is a step forward:
// accepted, and reported. The zero Clock (Tolerance 0) is off.
type Clock struct {
	Tolerance time.Duration // 0: off
	mu        sync.Mutex
	have      bool
	us        int64     // the last accepted reading, server microseconds
	sent      time.Time // the window it was taken in
	recv      time.Time
	behind    bool  // a step back was seen: refusing until past high
	high      int64 // where the server's clock had reached before it
}

// Observe checks the reading us (server microseconds) taken by a call
// sent at sent and answered at recv. It returns an error wrapping
// lockerr.ErrClockStep for a step back (and until the server's clock has
// made up for it); ahead > 0 says how far a step forward went (accepted).
func (c *Clock) Observe(us int64, sent, recv time.Time) (ahead time.Duration, err error) {
	if c.Tolerance <= 0 {
		return 0, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.behind && us <= c.high:
		return 0, fmt.Errorf("%w: back; its clock is %v short of where it had reached before (the tolerance is %v)",
			lockerr.ErrClockStep, (time.Duration(c.high-us) * time.Microsecond).Round(time.Millisecond), c.Tolerance)
	case c.behind, !c.have:
		// The first reading, or one past where the server's clock had
		// reached before a step back: start afresh.
		c.have, c.behind, c.us, c.sent, c.recv = true, false, us, sent, recv
		c.high = max(c.high, us)
		return 0, nil
	}
	// The local time between the readings lies in [lo, hi].
	lo, hi := sent.Sub(c.recv), recv.Sub(c.sent)
	slack := c.Tolerance + hi/1000
	moved := time.Duration(us-c.us) * time.Microsecond
	switch {
	case moved < lo-slack:
		c.behind = true
		c.high = max(c.high, c.us+lo.Microseconds())
		return 0, fmt.Errorf("%w: back by at least %v (its clock moved %v while %v passed here; the tolerance is %v)",
			lockerr.ErrClockStep, (lo - moved).Round(time.Millisecond), moved.Round(time.Millisecond), lo.Round(time.Millisecond), c.Tolerance)
	case moved > hi+slack:
		ahead = moved - hi
	}
	c.us, c.sent, c.recv = us, sent, recv
	c.high = max(c.high, us)
	return ahead, nil
}
