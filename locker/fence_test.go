package locker_test

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gomodule/redigo/redis"
	"github.com/locktag/locktag/locker"
)

func TestFence(t *testing.T) {
	var f locker.Fence
	steps := []struct {
		res   string
		token int64
		again bool
		stale bool
	}{
		{"a", 5, false, false},
		{"a", 5, false, true}, // the same token twice is a replay
		{"a", 5, true, false}, // unless the holder says it writes again
		{"a", 4, true, true},  // an older holder
		{"b", 1, false, false},
		{"a", 6, false, false},
	}
	for i, s := range steps {
		var err error
		if s.again {
			err = f.AdmitAgain(s.res, s.token)
		} else {
			err = f.Admit(s.res, s.token)
		}
		if got := errors.Is(err, locker.ErrStaleToken); got != s.stale {
			t.Fatalf("step %d (%s, %d): err %v, want stale=%v", i, s.res, s.token, err, s.stale)
		}
	}
}

// TestFenceClaim runs sequences of Claim, Check and Admit on one Fence.
func TestFenceClaim(t *testing.T) {
	type step struct {
		op    string // "claim", "check", "admit", "again"
		res   string
		token int64
		want  error
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"claim then check", []step{
			{"claim", "a", 10, nil},
			{"check", "a", 10, nil},
			{"check", "a", 10, nil}, // Check changes nothing
		}},
		{"claim again with the same token", []step{
			{"claim", "a", 10, nil},
			{"claim", "a", 10, nil},
			{"check", "a", 10, nil},
		}},
		{"a newer claim makes the older token stale", []step{
			{"claim", "a", 10, nil},
			{"claim", "a", 11, nil},
			{"check", "a", 10, locker.ErrStaleToken},
			{"claim", "a", 10, locker.ErrStaleToken},
			{"check", "a", 11, nil},
		}},
		{"check without claim", []step{
			{"check", "a", 10, locker.ErrNotClaimed},
			{"claim", "a", 9, nil},
			{"check", "a", 10, locker.ErrNotClaimed}, // 10 is newer, but it never claimed
		}},
		{"resources are independent", []step{
			{"claim", "a", 10, nil},
			{"claim", "b", 5, nil},
			{"check", "b", 5, nil},
			{"check", "a", 5, locker.ErrStaleToken},
		}},
		{"admit and claim share one fence", []step{
			{"admit", "a", 10, nil},
			{"claim", "a", 9, locker.ErrStaleToken},
			{"claim", "a", 11, nil},
			{"admit", "a", 11, locker.ErrStaleToken}, // after a claim, Check, not Admit
			{"again", "a", 11, nil},
			{"admit", "a", 12, nil},
			{"check", "a", 11, locker.ErrStaleToken},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f locker.Fence
			for i, s := range tt.steps {
				var err error
				switch s.op {
				case "claim":
					err = f.Claim(s.res, s.token)
				case "check":
					err = f.Check(s.res, s.token)
				case "admit":
					err = f.Admit(s.res, s.token)
				case "again":
					err = f.AdmitAgain(s.res, s.token)
				}
				if !errors.Is(err, s.want) || (err == nil) != (s.want == nil) {
					t.Fatalf("step %d %s(%s, %d): %v, want %v", i, s.op, s.res, s.token, err, s.want)
				}
			}
		})
	}
}

// rmwStore is a row of stock as a database holds it, with one of the
// fencing recipes for its read and its write. Each method is one atomic
// storage step (one statement).
type rmwStore struct {
	qty   int64
	fence locker.Fence
	read  func(f *locker.Fence, resource string, token int64) error // before the read
	write func(f *locker.Fence, resource string, token int64) error // with the write
}

func (s *rmwStore) Read(token int64) (int64, error) {
	if err := s.read(&s.fence, "row", token); err != nil {
		return 0, err
	}
	return s.qty, nil
}

func (s *rmwStore) Write(token, qty int64) error {
	if err := s.write(&s.fence, "row", token); err != nil {
		return err
	}
	s.qty = qty
	return nil
}

// TestReadModifyWritePausedHolder is the paused read-modify-write timeline, step by step:
// holder A (token 10) reads qty 5 and is paused past its lease; B (token 11)
// takes the lock and reads qty 5; A resumes and writes 4; B writes 4.
// Write-only fencing (Admit) admits both writes and loses a sale; claiming
// before the read refuses A's write.
func TestReadModifyWritePausedHolder(t *testing.T) {
	const a, b = 10, 11
	none := func(*locker.Fence, string, int64) error { return nil }
	tests := []struct {
		name        string
		read, write func(f *locker.Fence, resource string, token int64) error
		aWrite      error // A's write, after B's read
		lost        bool  // the final qty does not count every acknowledged sale
	}{
		{"write-only Admit", none, (*locker.Fence).Admit, nil, true},
		{"write-only AdmitAgain", none, (*locker.Fence).AdmitAgain, nil, true},
		{"Claim before the read, Check with the write", (*locker.Fence).Claim, (*locker.Fence).Check, locker.ErrStaleToken, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &rmwStore{qty: 5, read: tt.read, write: tt.write}
			// The previous holder, token 9, set the row up.
			if err := s.read(&s.fence, "row", 9); err != nil {
				t.Fatal(err)
			}
			if err := s.Write(9, 5); err != nil {
				t.Fatal(err)
			}
			sold := 0
			qa, err := s.Read(a) // A reads, then is paused
			if err != nil {
				t.Fatalf("A's read: %v", err)
			}
			qb, err := s.Read(b) // B holds the lock now, and reads the same qty
			if err != nil {
				t.Fatalf("B's read: %v", err)
			}
			err = s.Write(a, qa-1) // A resumes
			if !errors.Is(err, tt.aWrite) || (err == nil) != (tt.aWrite == nil) {
				t.Fatalf("A's write: %v, want %v", err, tt.aWrite)
			}
			if err == nil {
				sold++
			}
			if err := s.Write(b, qb-1); err != nil {
				t.Fatalf("B's write: %v", err)
			}
			sold++
			if lost := s.qty != 5-int64(sold); lost != tt.lost {
				t.Fatalf("qty %d after %d acknowledged sales from 5: lost=%v, want %v", s.qty, sold, lost, tt.lost)
			}
		})
	}
}

// The same timeline on a Fenced value: A's Store is refused.
func TestFencedPausedHolder(t *testing.T) {
	stock := locker.NewFenced[int64](5)
	qa, errA := stock.Load(10)
	qb, errB := stock.Load(11)
	if errA != nil || errB != nil || qa != 5 || qb != 5 {
		t.Fatalf("loads: %d %v, %d %v", qa, errA, qb, errB)
	}
	if err := stock.Store(10, qa-1); !errors.Is(err, locker.ErrStaleToken) {
		t.Fatalf("A's store: %v, want ErrStaleToken", err)
	}
	if err := stock.Store(11, qb-1); err != nil {
		t.Fatalf("B's store: %v", err)
	}
	if _, err := stock.Update(10, func(q int64) (int64, error) { return q - 1, nil }); !errors.Is(err, locker.ErrStaleToken) {
		t.Fatalf("A's update: %v, want ErrStaleToken", err)
	}
	if q, _ := stock.Load(11); q != 4 {
		t.Fatalf("qty %d, want 4", q)
	}
}

func TestFencedUpdate(t *testing.T) {
	errSoldOut := errors.New("sold out")
	sell := func(q int) (int, error) {
		if q == 0 {
			return 0, errSoldOut
		}
		return q - 1, nil
	}
	tests := []struct {
		name  string
		start int
		prior int64 // the token of a previous claim; 0: none
		token int64
		want  int
		err   error
		after int // value afterwards, loaded with token 100
	}{
		{"first claim", 2, 0, 7, 1, nil, 1},
		{"same token again", 2, 8, 8, 1, nil, 1},
		{"newer token", 2, 8, 9, 1, nil, 1},
		{"stale token: fn not called", 2, 8, 3, 0, locker.ErrStaleToken, 2},
		{"fn fails: nothing stored", 0, 8, 9, 0, errSoldOut, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := locker.NewFenced(tt.start)
			if tt.prior != 0 {
				if _, err := c.Load(tt.prior); err != nil {
					t.Fatal(err)
				}
			}
			called := false
			got, err := c.Update(tt.token, func(q int) (int, error) { called = true; return sell(q) })
			if called != (tt.err != locker.ErrStaleToken) {
				t.Errorf("fn called: %v", called)
			}
			if !errors.Is(err, tt.err) || (err == nil) != (tt.err == nil) || got != tt.want {
				t.Fatalf("Update(%d): %d, %v; want %d, %v", tt.token, got, err, tt.want, tt.err)
			}
			if v, _ := c.Load(100); v != tt.after {
				t.Fatalf("value %d afterwards, want %d", v, tt.after)
			}
		})
	}
}

func TestFencedStoreWithoutClaim(t *testing.T) {
	var c locker.Fenced[string]
	if err := c.Store(1, "x"); !errors.Is(err, locker.ErrNotClaimed) {
		t.Fatalf("Store without Load: %v, want ErrNotClaimed", err)
	}
	if v, err := c.Load(1); err != nil || v != "" {
		t.Fatalf("Load: %q, %v; want the zero value", v, err)
	}
}

// Concurrent holders with increasing tokens race through Load and Store:
// some are refused, and every Store that succeeded is counted in the value.
func TestFencedConcurrentNoLostUpdate(t *testing.T) {
	var c locker.Fenced[int]
	var mu sync.Mutex
	stored := 0
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				token := int64(i*8 + g + 1) // unique, and roughly increasing over time
				v, err := c.Load(token)
				if err != nil {
					continue
				}
				if err := c.Store(token, v+1); err == nil {
					mu.Lock()
					stored++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	v, err := c.Load(1 << 40)
	if err != nil {
		t.Fatal(err)
	}
	if v != stored || stored == 0 {
		t.Fatalf("value %d after %d acknowledged stores", v, stored)
	}
	t.Logf("%d of %d stores acknowledged", stored, 8*200)
}

// The Redis recipes of the examples (sellScript, sellWatch) under
// concurrency: holders with interleaved, increasing tokens sell from one
// hash at once. Some are refused as stale; every acknowledged sale is
// counted in the stock.
func TestRedisRecipesNoLostUpdate(t *testing.T) {
	script := redis.NewScript(1, sellScript)
	recipes := []struct {
		name string
		sell func(c redis.Conn, key string, token int64) error
	}{
		{"lua script", func(c redis.Conn, key string, token int64) error {
			_, err := script.Do(c, key, token, 1)
			if err != nil && strings.HasPrefix(err.Error(), "STALE") {
				return errStale
			}
			return err
		}},
		{"watch multi exec", func(c redis.Conn, key string, token int64) error {
			_, err := sellWatch(c, key, token, nil)
			return err
		}},
	}
	pool := examplePool()
	defer pool.Close()
	for _, r := range recipes {
		t.Run(r.name, func(t *testing.T) {
			const stock, holders, sales = 1000, 6, 40
			key := "test:stock:{" + r.name + "}"
			c := pool.Get()
			defer c.Close()
			if _, err := c.Do("HSET", key, "qty", stock, "fence", 0); err != nil {
				t.Fatal(err)
			}
			var tokens atomic.Int64
			var acked, stale atomic.Int64
			var wg sync.WaitGroup
			for range holders {
				wg.Go(func() {
					c := pool.Get()
					defer c.Close()
					for range sales {
						switch err := r.sell(c, key, tokens.Add(1)); {
						case err == nil:
							acked.Add(1)
						case errors.Is(err, errStale):
							stale.Add(1)
						default:
							t.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			qty, err := redis.Int64(c.Do("HGET", key, "qty"))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d sales acknowledged, %d stale, qty %d", acked.Load(), stale.Load(), qty)
			if acked.Load() == 0 || qty != stock-acked.Load() {
				t.Fatalf("qty %d after %d acknowledged sales from %d", qty, acked.Load(), stock)
			}
		})
	}
}

// writeOnlyScript is write-only fencing in Redis, the recipe not to use for
// a read-modify-write: the write is admitted if its token is larger than
// the hash's fence, whatever the holder read.
const writeOnlyScript = `
if tonumber(ARGV[1]) <= tonumber(redis.call('HGET', KEYS[1], 'fence') or 0) then
  return redis.error_reply('STALE fencing token')
end
redis.call('HSET', KEYS[1], 'qty', ARGV[2], 'fence', ARGV[1])
return 1
`

// The paused-holder timeline against Redis: B (token 11) reads qty 5; A
// (token 10, its lock lost) reads 5 and writes 4; B writes. Write-only
// fencing admits both writes and loses a sale; WATCH/MULTI (sellWatch)
// makes B read again and loses nothing.
func TestRedisRecipesPausedHolder(t *testing.T) {
	writeOnly := redis.NewScript(1, writeOnlyScript)
	sellWriteOnly := func(c redis.Conn, key string, token int64, between func()) (int64, error) {
		qty, err := redis.Int64(c.Do("HGET", key, "qty"))
		if err != nil {
			return 0, err
		}
		if between != nil {
			between()
		}
		_, err = writeOnly.Do(c, key, token, qty-1)
		return qty - 1, err
	}
	tests := []struct {
		name string
		sell func(c redis.Conn, key string, token int64, between func()) (int64, error)
		lost bool
	}{
		{"write-only fencing", sellWriteOnly, true},
		{"watch multi exec", sellWatch, false},
	}
	pool := examplePool()
	defer pool.Close()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ca, cb := pool.Get(), pool.Get()
			defer ca.Close()
			defer cb.Close()
			key := "test:stock:{paused " + tt.name + "}"
			if _, err := cb.Do("HSET", key, "qty", 5, "fence", 9); err != nil {
				t.Fatal(err)
			}
			sold := 0
			_, err := tt.sell(cb, key, 11, func() {
				if _, err := tt.sell(ca, key, 10, nil); err != nil {
					t.Errorf("A: %v", err)
				} else {
					sold++
				}
			})
			if err != nil {
				t.Fatalf("B: %v", err)
			}
			sold++
			qty, err := redis.Int64(cb.Do("HGET", key, "qty"))
			if err != nil {
				t.Fatal(err)
			}
			if lost := qty != int64(5-sold); lost != tt.lost {
				t.Fatalf("qty %d after %d acknowledged sales from 5: lost=%v, want %v", qty, sold, lost, tt.lost)
			}
		})
	}
}
