package job_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/locktag/locktag/internal/flaky"
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
func replica(t testing.TB, srv *redistest.Server, opts ...locker.Option) *locker.Locker {
	t.Helper()
	lk, err := locker.New(redigo.New(srv.Pool(t)), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk.Close() })
	return lk
}

// cutOff returns a replica whose connection to srv can be cut (its Down
// flag): its renewals fail as if its process were cut off from Redis.
func cutOff(t testing.TB, srv *redistest.Server, opts ...locker.Option) (*locker.Locker, *flaky.Driver) {
	t.Helper()
	f := &flaky.Driver{Driver: redigo.New(srv.Pool(t))}
	lk, err := locker.New(f, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk.Close() })
	return lk, f
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	testwait.Within(t, within, what, cond)
}

// queued is the number of waiters queued in Redis for lock name.
func queued(t testing.TB, srv *redistest.Server, name string) int {
	t.Helper()
	n, err := redis.Int(srv.Do("ZCARD", "locktag:{"+name+"}:q"))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// overlap is the detector of mutual exclusion: enter and leave bracket a
// section, and max is the most sections ever inside at once.
type overlap struct {
	in, most atomic.Int64
}

func (o *overlap) enter() {
	n := o.in.Add(1)
	for {
		m := o.most.Load()
		if n <= m || o.most.CompareAndSwap(m, n) {
			return
		}
	}
}

func (o *overlap) leave() { o.in.Add(-1) }

// tally counts runs per tick.
type tally struct {
	mu   sync.Mutex
	runs map[int]int
}

func (c *tally) add(tick int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runs == nil {
		c.runs = make(map[int]int)
	}
	c.runs[tick]++
}

// count returns, for ticks 0..n-1, how many ran never, once and more than
// once.
func (c *tally) count(n int) (never, once, more int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range n {
		switch c.runs[i] {
		case 0:
			never++
		case 1:
			once++
		default:
			more++
		}
	}
	return never, once, more
}

// forfeited counts the ticks 0..n-1 that never ran and that late recorded,
// for themselves or for the tick before (a late lock held into the next).
func (c *tally) forfeited(n int, late *tally) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	late.mu.Lock()
	defer late.mu.Unlock()
	k := 0
	for i := range n {
		if c.runs[i] == 0 && (late.runs[i] > 0 || late.runs[i-1] > 0) {
			k++
		}
	}
	return k
}
