package backend

import (
	"errors"
	"testing"
	"time"

	"github.com/locktag/locktag/locker/internal/lockerr"
)

// TestClock: readings that move with the local clock pass, whatever the
// windows; a step back beyond the tolerance is refused until the server's
// clock is past the highest reading, then accepted afresh; a step forward
// is accepted and reported; the zero Clock checks nothing.
func TestClock(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	const base = int64(1_000_000_000_000) // server µs at t0
	us := func(ms int) int64 { return base + int64(ms)*1000 }
	c := &Clock{Tolerance: 100 * time.Millisecond}
	steps := []struct {
		name       string
		reading    int64
		sent, recv int
		back       bool
		ahead      bool
	}{
		{"first", us(0), 0, 1, false, false},
		{"in step", us(1000), 999, 1001, false, false},
		{"a slow call", us(1500), 1100, 2000, false, false},
		{"overlapping calls", us(1400), 1300, 1600, false, false},
		{"within the tolerance", us(2000 - 90), 2000, 2001, false, false},
		{"a step back", us(3000 - 1000), 3000, 3001, true, false},
		{"still behind", us(3500 - 1000), 3500, 3501, true, false},
		{"past the highest reading", us(4200 - 1000), 4200, 4201, false, false},
		{"in step again", us(5200 - 1000), 5200, 5201, false, false},
		{"a step forward", us(6200 + 5000), 6200, 6201, false, true},
	}
	for _, s := range steps {
		ahead, err := c.Observe(s.reading, at(s.sent), at(s.recv))
		if got := errors.Is(err, lockerr.ErrClockStep); got != s.back {
			t.Fatalf("%s: %v, want a step back: %v", s.name, err, s.back)
		}
		if (ahead > 0) != s.ahead {
			t.Fatalf("%s: ahead %v, want a step forward: %v", s.name, ahead, s.ahead)
		}
	}
	var off Clock
	for _, r := range []int64{us(0), us(-100000)} {
		if _, err := off.Observe(r, t0, t0); err != nil {
			t.Fatalf("the zero Clock: %v", err)
		}
	}
}
