package interceptor

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/locktag/locktag/interceptor/internal/rpccore/testpb"
	"github.com/locktag/locktag/interceptor/internal/testpbgrpc"
	"github.com/locktag/locktag/internal/flaky"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/locker/redigo"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestIdempotencyUnaryCrash(t *testing.T) {
	e := newEnv(t)
	f := &flaky.Driver{Driver: redigo.New(e.redis.Pool(t))}
	crashing, err := locker.New(f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = crashing.Close() })
	lease := guard.WithInFlightLease(300 * time.Millisecond)
	entered, resume := make(chan struct{}), make(chan struct{})
	impl1, impl2 := &inventory{}, &inventory{}
	impl1.reserve = func(context.Context, *testpb.ReserveRequest) (*testpb.ReserveResponse, error) {
		close(entered)
		<-resume
		return &testpb.ReserveResponse{Token: 111}, nil
	}
	impl2.reserve = func(context.Context, *testpb.ReserveRequest) (*testpb.ReserveResponse, error) {
		return &testpb.ReserveResponse{Token: 222}, nil
	}
	c1, c2 := idemServe(t, crashing, impl1, nil, lease), idemServe(t, e.lk, impl2, nil, lease)
	done := make(chan callResult, 1)
	go func() { done <- reserve(t, c1, "k", "alice", sku("a")) }()
	recv(t, entered, "the first handler")
	f.Down.Store(true)
	wantReason(t, reserve(t, c2, "k", "alice", sku("a")).err, codes.Aborted, ReasonInFlight)
	var retry callResult
	waitFor(t, "the retry to run after the lease", func() bool {
		retry = reserve(t, c2, "k", "alice", sku("a"))
		return status.Code(retry.err) != codes.Aborted
	})
	if retry.err != nil || retry.resp.Token != 222 {
		t.Fatalf("retry: %v %v", retry.resp, retry.err)
	}
	close(resume)
	recv(t, done, "the first call")
	f.Down.Store(false)
	sameOutcome(t, retry, reserve(t, c1, "k", "alice", sku("a")))
}

func TestIdempotencyUnaryPolicies(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    []Option
		fail    bool // the first call fails with Internal
		replays bool // the retry replays (else runs again)
	}{
		{"oversize keep", []Option{guard.WithMaxResponseBytes(4)}, false, false},
		{"oversize release", []Option{guard.WithMaxResponseBytes(4), guard.WithOversizePolicy(guard.OversizeReleaseKey)}, false, false},
		{"server error stored", nil, true, true},
		{"server error released", []Option{guard.WithServerErrorPolicy(guard.ReleaseServerErrors)}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			impl := &inventory{}
			impl.reserve = func(ctx context.Context, req *testpb.ReserveRequest) (*testpb.ReserveResponse, error) {
				if tc.fail && impl.calls.Load() == 1 {
					return nil, status.Error(codes.Internal, "database failed")
				}
				return &testpb.ReserveResponse{Token: 1 << 40}, nil // more than 4 bytes marshalled
			}
			c := idemServe(t, e.lk, impl, nil, tc.opts...)
			first := reserve(t, c, "k", "alice", sku("a"))
			if (first.err != nil) != tc.fail {
				t.Fatalf("first: %v", first.err)
			}
			retry := reserve(t, c, "k", "alice", sku("a"))
			switch {
			case tc.replays:
				sameOutcome(t, first, retry)
			case tc.name == "oversize keep":
				st := wantCode(t, retry.err, codes.FailedPrecondition)
				if ei := errorInfo(st); ei == nil || ei.Reason != ReasonResponseNotStored || ei.Metadata["firstCode"] != "OK" {
					t.Fatalf("not-stored status %v", st)
				}
			default:
				if retry.err != nil || retry.replayed() || impl.calls.Load() != 2 {
					t.Fatalf("retry %v, replayed %v, %d calls; want a fresh run", retry.err, retry.replayed(), impl.calls.Load())
				}
			}
		})
	}
}

func TestIdempotencyUnaryReplayWait(t *testing.T) {
	e := newEnv(t)
	entered, resume := make(chan struct{}), make(chan struct{})
	impl := &inventory{}
	impl.reserve = func(ctx context.Context, req *testpb.ReserveRequest) (*testpb.ReserveResponse, error) {
		if impl.calls.Load() == 1 {
			close(entered)
			<-resume
		}
		return counting(impl)(ctx, req)
	}
	c := idemServe(t, e.lk, impl, nil, guard.WithReplayWait(10*time.Second))
	first, second := make(chan callResult, 1), make(chan callResult, 1)
	go func() { first <- reserve(t, c, "k", "alice", sku("a")) }()
	recv(t, entered, "the first handler")
	go func() { second <- reserve(t, c, "k", "alice", sku("a")) }()
	waitFor(t, "the second call waiting", func() bool {
		keys, _ := redis.Strings(e.redis.Do("KEYS", "locktag:*:rw"))
		return len(keys) == 1
	})
	close(resume)
	f := recv(t, first, "the first call")
	sameOutcome(t, f, recv(t, second, "the replay"))
	if impl.calls.Load() != 1 {
		t.Fatalf("%d executions, want 1", impl.calls.Load())
	}
}

// TestIdempotencyUnaryWithLock: the guard before the lock interceptor; a
// busy lock is not stored as the key's outcome.
func TestIdempotencyUnaryWithLock(t *testing.T) {
	e := newEnv(t)
	impl := &inventory{}
	impl.reserve = counting(impl)
	ic, err := New(e.lk, Rules{methodReserve: `key:"sku:{req.sku}"`})
	if err != nil {
		t.Fatal(err)
	}
	c := idemServe(t, e.lk, impl, []grpc.UnaryServerInterceptor{ic.Unary()})
	held := e.hold(t, "sku:a")
	wantReason(t, reserve(t, c, "k", "alice", sku("a")).err, codes.Aborted, ReasonBusy)
	if err := held.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	first := reserve(t, c, "k", "alice", sku("a"))
	if first.err != nil || first.replayed() {
		t.Fatalf("after the lock is free: %v", first.err)
	}
	sameOutcome(t, first, reserve(t, c, "k", "alice", sku("a")))
	if impl.calls.Load() != 1 {
		t.Fatalf("%d executions, want 1", impl.calls.Load())
	}
}

// TestIdempotencyUnaryExactlyOnce: 50 identical concurrent calls over five
// servers, each with its own Locker and pool → one execution; the others
// Aborted or the identical replay (with a replay wait: the replay). The
// control sends the same workload to unguarded servers.
func TestIdempotencyUnaryExactlyOnce(t *testing.T) {
	const procs, calls = 5, 50
	for _, tc := range []struct {
		name  string
		opts  []Option
		guard bool
	}{
		{"aborted or replay", nil, true},
		{"wait and replay", []Option{guard.WithReplayWait(10 * time.Second)}, true},
		{"control: no guard", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			var executions atomic.Int64
			clients := make([]testpbgrpc.InventoryClient, procs)
			for i := range clients {
				impl := &inventory{}
				impl.reserve = func(context.Context, *testpb.ReserveRequest) (*testpb.ReserveResponse, error) {
					n := executions.Add(1)
					time.Sleep(20 * time.Millisecond) // the work
					return &testpb.ReserveResponse{Token: n}, nil
				}
				if !tc.guard {
					clients[i] = startServer(t, impl)
					continue
				}
				lk, err := locker.New(redigo.New(srv.Pool(t)))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = lk.Close() })
				clients[i] = idemServe(t, lk, impl, nil, tc.opts...)
			}
			res := make([]callResult, calls)
			var start, wg sync.WaitGroup
			start.Add(1)
			for i := range calls {
				wg.Go(func() {
					start.Wait()
					res[i] = reserve(t, clients[i%procs], "same-key", "alice", sku("a"))
				})
			}
			start.Done()
			wg.Wait()
			var executed *callResult
			seen := map[string]int{}
			for i, r := range res {
				switch {
				case status.Code(r.err) == codes.Aborted:
					seen["aborted"]++
				case r.replayed():
					seen["replay"]++
				default:
					seen[status.Code(r.err).String()]++
					executed = &res[i]
				}
			}
			n := executions.Load()
			t.Logf("%d calls over %d servers: %d executions; outcomes %v", calls, procs, n, seen)
			if !tc.guard {
				if n <= 1 {
					t.Fatalf("control: %d executions; the counter cannot see a double execution", n)
				}
				return
			}
			if n != 1 || seen["OK"] != 1 || seen["aborted"]+seen["replay"] != calls-1 {
				t.Fatalf("%d executions, outcomes %v; want 1 execution, the rest Aborted or replay", n, seen)
			}
			for _, r := range res {
				if r.replayed() {
					sameOutcome(t, *executed, r)
				}
			}
			if len(tc.opts) > 0 && seen["replay"] != calls-1 {
				t.Fatalf("with a replay wait: %v, want %d replays", seen, calls-1)
			}
		})
	}
}

// TestIdempotencyUnaryBadLockKeyFreesKey (drift bug 1): a lock interceptor
// after the guard refuses a call whose lock key cannot be resolved (here:
// metadata the key names is missing). The handler did not run, so the
// refusal must not become the key's recorded outcome: a retry that carries
// the metadata executes, and is not a replay of the InvalidArgument.
func TestIdempotencyUnaryBadLockKeyFreesKey(t *testing.T) {
	e := newEnv(t)
	impl := &inventory{}
	impl.reserve = counting(impl)
	ic, err := New(e.lk, Rules{methodReserve: `key:"shop:{md.x-shop}:{req.sku}"`})
	if err != nil {
		t.Fatal(err)
	}
	c := idemServe(t, e.lk, impl, []grpc.UnaryServerInterceptor{ic.Unary()})
	call := func(kv ...string) callResult {
		ctx, cancel := context.WithTimeout(metadataCtx(context.Background(),
			append([]string{"x-user", "alice", IdempotencyKeyMetadata, "k"}, kv...)...), 20*time.Second)
		defer cancel()
		var r callResult
		r.resp, r.err = c.Reserve(ctx, sku("a"), grpc.Header(&r.header), grpc.Trailer(&r.trailer))
		return r
	}
	first := call()
	wantCode(t, first.err, codes.InvalidArgument)
	retry := call("x-shop", "s1")
	if retry.err != nil || retry.replayed() || impl.calls.Load() != 1 {
		t.Fatalf("retry with the lock key's metadata: %v (replayed %v, %d executions); want a fresh execution",
			retry.err, retry.replayed(), impl.calls.Load())
	}
	sameOutcome(t, retry, call("x-shop", "s1"))
}
