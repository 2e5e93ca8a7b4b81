package gocronlock_test

import (
	"sync"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/redigo"
)

// exampleRedis is a redis-server started for the examples by TestMain.
var exampleRedis *redistest.Server

func TestMain(m *testing.M) {
	redistest.Main(m, func(s *redistest.Server) { exampleRedis = s })
}

// replica returns a Locker on its own pool to srv, as one replica of a
// service would have, closed at the test's end.
func replica(t testing.TB, srv *redistest.Server) *locker.Locker {
	t.Helper()
	lk, err := locker.New(redigo.New(srv.Pool(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk.Close() })
	return lk
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	testwait.Within(t, within, what, cond)
}

// ticks records which scheduler ran which tick of a schedule that starts
// at start and repeats every period.
type ticks struct {
	start  time.Time
	period time.Duration

	mu   sync.Mutex
	runs map[int][]int // tick -> schedulers that ran it
	all  []int         // schedulers, in the order of their runs
}

func newTicks(start time.Time, period time.Duration) *ticks {
	return &ticks{start: start, period: period, runs: make(map[int][]int)}
}

// ran records a run by scheduler s now: the tick is the nearest one.
func (k *ticks) ran(s int) {
	tick := int((time.Since(k.start) + k.period/2) / k.period)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.runs[tick] = append(k.runs[tick], s)
	k.all = append(k.all, s)
}

// count returns, for ticks from..to-1, how many runs there were and how
// many ticks ran never, once and more than once.
func (k *ticks) count(from, to int) (total, never, once, more int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for i := from; i < to; i++ {
		total += len(k.runs[i])
		switch len(k.runs[i]) {
		case 0:
			never++
		case 1:
			once++
		default:
			more++
		}
	}
	return total, never, once, more
}

// by returns the schedulers that ran ticks from..to-1.
func (k *ticks) by(from, to int) map[int]bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make(map[int]bool)
	for i := from; i < to; i++ {
		for _, s := range k.runs[i] {
			out[s] = true
		}
	}
	return out
}

// now is the tick due now.
func (k *ticks) now() int { return int((time.Since(k.start) + k.period/2) / k.period) }

// order returns the schedulers in the order of their runs.
func (k *ticks) order() []int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]int(nil), k.all...)
}
