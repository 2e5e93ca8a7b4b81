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
	script := luaScript(1, sellScript)
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
	writeOnly := luaScript(1, writeOnlyScript)
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
