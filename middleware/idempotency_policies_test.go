package middleware_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/internal/flaky"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/locker/redigo"
	"github.com/locktag/locktag/middleware"
)

// TestIdempotencyCrash: the first request's process stops reaching Redis
// mid-request (neither completing nor abandoning); after the in-flight
// lease a retry on another process executes and its response is the one
// replayed; the first process's late response is not stored.
func TestIdempotencyCrash(t *testing.T) {
	srv, lk := setup(t)
	f := &flaky.Driver{Driver: redigo.New(srv.Pool(t))}
	crashing, err := locker.New(f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = crashing.Close() })
	lease := guard.WithInFlightLease(300 * time.Millisecond)
	entered, resume := make(chan struct{}), make(chan struct{})
	p1 := &payments{work: func(*gin.Context) { close(entered); <-resume }}
	p2 := &payments{}
	h1, h2 := p1.engine(crashing, lease), p2.engine(lk, lease)

	done := make(chan *httptest.ResponseRecorder, 1)
	go func() { done <- pay(h1, "k", "alice", "{}") }()
	recv(t, entered, "the first handler")
	f.Down.Store(true)
	wantStatus(t, pay(h2, "k", "alice", "{}"), http.StatusConflict, "idempotency-key-in-flight")
	var retry *httptest.ResponseRecorder
	eventually(t, 5*time.Second, "the retry executes after the lease", func() bool {
		retry = pay(h2, "k", "alice", "{}")
		return retry.Code != http.StatusConflict
	})
	wantStatus(t, retry, http.StatusCreated, "")
	close(resume)
	recv(t, done, "the first response")
	f.Down.Store(false)
	sameResponse(t, retry, pay(h1, "k", "alice", "{}"))
	if p1.executions.Load() != 1 || p2.executions.Load() != 1 {
		t.Fatalf("executions %d + %d, want 1 + 1", p1.executions.Load(), p2.executions.Load())
	}
}

func TestIdempotencyOversize(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy guard.OversizePolicy
	}{{"keep key", guard.OversizeKeepKey}, {"release key", guard.OversizeReleaseKey}} {
		t.Run(tc.name, func(t *testing.T) {
			_, lk := setup(t)
			p := &payments{}
			h := p.engine(lk, guard.WithMaxResponseBytes(10), guard.WithOversizePolicy(tc.policy))
			first := pay(h, "k", "alice", "{}")
			wantStatus(t, first, http.StatusCreated, "")
			if !strings.Contains(first.Body.String(), `"receipt":1`) {
				t.Fatalf("first client did not get the whole response: %s", first.Body)
			}
			retry := pay(h, "k", "alice", "{}")
			if tc.policy == guard.OversizeKeepKey {
				wantStatus(t, retry, http.StatusUnprocessableEntity, "idempotency-response-not-stored")
				if !strings.Contains(retry.Body.String(), "status 201") {
					t.Fatalf("detail does not name the first status: %s", retry.Body)
				}
				if p.executions.Load() != 1 {
					t.Fatal("the handler ran again")
				}
				return
			}
			wantStatus(t, retry, http.StatusCreated, "")
			if p.executions.Load() != 2 {
				t.Fatal("the released key did not run again")
			}
		})
	}
}

func TestIdempotencyServerErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy guard.ServerErrorPolicy
	}{{"store", guard.StoreServerErrors}, {"release", guard.ReleaseServerErrors}} {
		t.Run(tc.name, func(t *testing.T) {
			_, lk := setup(t)
			var calls atomic.Int64
			r := gin.New()
			r.POST("/pay/:id", middleware.Idempotency(lk, userScope, guard.WithServerErrorPolicy(tc.policy)),
				func(c *gin.Context) {
					if calls.Add(1) == 1 {
						c.String(http.StatusBadGateway, "upstream failed")
						return
					}
					c.String(http.StatusOK, "paid")
				})
			first := pay(r, "k", "alice", "{}")
			wantStatus(t, first, http.StatusBadGateway, "")
			retry := pay(r, "k", "alice", "{}")
			if tc.policy == guard.StoreServerErrors {
				sameResponse(t, first, retry)
			} else if retry.Code != http.StatusOK || retry.Header().Get(middleware.ReplayedHeader) != "" {
				t.Fatalf("retry %d %s, want a fresh 200", retry.Code, retry.Body)
			}
		})
	}
}

// idemWaiters is the number of requests waiting for an in-flight key.
func idemWaiters(t *testing.T, srv *redistest.Server) int64 {
	keys, err := redis.Strings(srv.Do("KEYS", "locktag:*:rw"))
	if err != nil || len(keys) == 0 {
		return 0
	}
	n, _ := redis.Int64(srv.Do("SCARD", keys[0]))
	return n
}

func TestIdempotencyReplayWait(t *testing.T) {
	srv, lk := setup(t)
	entered, resume := make(chan struct{}), make(chan struct{})
	var once sync.Once
	p := &payments{work: func(*gin.Context) {
		once.Do(func() { close(entered); <-resume })
	}}
	h := p.engine(lk, guard.WithReplayWait(10*time.Second))
	first := make(chan *httptest.ResponseRecorder, 1)
	go func() { first <- pay(h, "k", "alice", "{}") }()
	recv(t, entered, "the first handler")
	second := make(chan *httptest.ResponseRecorder, 1)
	go func() { second <- pay(h, "k", "alice", "{}") }()
	eventually(t, 5*time.Second, "the second request waiting", func() bool { return idemWaiters(t, srv) == 1 })
	close(resume)
	f := recv(t, first, "the first response")
	sameResponse(t, f, recv(t, second, "the replay"))
	if n := p.executions.Load(); n != 1 {
		t.Fatalf("%d executions, want 1", n)
	}
}

// TestIdempotencyWithLock: Idempotency before Lock. A lock refusal is not
// stored as the key's outcome: once the lock is free, the retry executes.
func TestIdempotencyWithLock(t *testing.T) {
	_, lk := setup(t)
	p := &payments{}
	r := gin.New()
	r.POST("/pay/:id", middleware.Idempotency(lk, userScope), middleware.Lock(lk, `key:"order:{path.id}"`), p.handler)
	held, err := lk.Obtain(context.Background(), "order:1", locker.Params{})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, pay(r, "k", "alice", "{}"), http.StatusConflict, "lock-busy")
	if err := held.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	first := pay(r, "k", "alice", "{}")
	wantStatus(t, first, http.StatusCreated, "")
	sameResponse(t, first, pay(r, "k", "alice", "{}"))
	if n := p.executions.Load(); n != 1 {
		t.Fatalf("%d executions, want 1", n)
	}
}

func TestIdempotencyUnavailable(t *testing.T) {
	srv, lk := setup(t)
	p := &payments{}
	h := p.engine(lk)
	srv.Stop()
	wantStatus(t, pay(h, "k", "alice", "{}"), http.StatusServiceUnavailable, "idempotency-unavailable")
	if p.executions.Load() != 0 {
		t.Fatal("the handler ran without the guard")
	}
}

// TestIdempotencyExactlyOnce: 50 identical concurrent requests spread over
// five processes (a Locker, pool and engine each) run the handler once;
// every other response is 409 or the identical replay (with a replay wait:
// the replay). The control sends the same workload with no guard.
func TestIdempotencyExactlyOnce(t *testing.T) {
	const procs, requests = 5, 50
	for _, tc := range []struct {
		name string
		opts []middleware.Option
		bare bool
	}{
		{"409 or replay", nil, false},
		{"wait and replay", []middleware.Option{guard.WithReplayWait(10 * time.Second)}, false},
		{"control: no guard", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			p := &payments{work: func(*gin.Context) { time.Sleep(20 * time.Millisecond) }} // the work
			engines := make([]http.Handler, procs)
			for i := range engines {
				lk, err := locker.New(redigo.New(srv.Pool(t)))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = lk.Close() })
				if tc.bare {
					r := gin.New()
					r.POST("/pay/:id", p.handler)
					engines[i] = r
				} else {
					engines[i] = p.engine(lk, tc.opts...)
				}
			}
			recs := make([]*httptest.ResponseRecorder, requests)
			var start sync.WaitGroup
			start.Add(1)
			var wg sync.WaitGroup
			for i := range requests {
				wg.Go(func() {
					start.Wait()
					recs[i] = pay(engines[i%procs], "same-key", "alice", `{"amount":10}`)
				})
			}
			start.Done()
			wg.Wait()
			var executed *httptest.ResponseRecorder
			codes := map[string]int{}
			for _, rec := range recs {
				switch {
				case rec.Code == http.StatusConflict:
					codes["409"]++
				case rec.Header().Get(middleware.ReplayedHeader) == "true":
					codes["replay"]++
				default:
					codes[fmt.Sprint(rec.Code)]++
					executed = rec
				}
			}
			n := p.executions.Load()
			t.Logf("%d requests over %d processes: %d executions; responses %v", requests, procs, n, codes)
			if tc.bare {
				if n <= 1 {
					t.Fatalf("control: %d executions; the counter cannot see a double execution", n)
				}
				return
			}
			if n != 1 || executed == nil || codes["201"] != 1 || codes["409"]+codes["replay"] != requests-1 {
				t.Fatalf("%d executions, responses %v; want 1 execution, the rest 409 or replay", n, codes)
			}
			for _, rec := range recs {
				if rec.Header().Get(middleware.ReplayedHeader) == "true" {
					sameResponse(t, executed, rec)
				}
			}
			if len(tc.opts) > 0 && codes["replay"] != requests-1 {
				t.Fatalf("with a replay wait: responses %v, want %d replays", codes, requests-1)
			}
		})
	}
}
