package interceptor

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locktag/locktag/interceptor/internal/rpccore/testpb"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// criticalSection is the workload of the mutual-exclusion tests: it counts
// holders and does a read-yield-write on a shared counter, which loses
// updates when two handlers overlap.
func criticalSection(d *detector, counter *atomic.Int64) {
	d.enter()
	defer d.leave()
	v := counter.Load()
	for range 20 {
		runtime.Gosched()
	}
	counter.Store(v + 1)
}

func TestSerialisesPerKey(t *testing.T) {
	e := newEnv(t)
	var d detector
	var counter atomic.Int64
	impl := &inventory{reserve: func(ctx context.Context, _ *testpb.ReserveRequest) (*testpb.ReserveResponse, error) {
		criticalSection(&d, &counter)
		return &testpb.ReserveResponse{Token: tokenOf(ctx)}, nil
	}}
	client := e.serve(t, impl, Rules{methodReserve: `key:"sku:{req.sku}" wait:"15s"`})
	ctx := testCtx(t)

	const workers, perWorker = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers*perWorker)
	for range workers {
		wg.Go(func() {
			for range perWorker {
				if _, err := client.Reserve(ctx, &testpb.ReserveRequest{Sku: "hot"}); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Reserve: %v", err)
	}
	if got := d.max.Load(); got != 1 {
		t.Errorf("max holders = %d, want 1", got)
	}
	if got := counter.Load(); got != workers*perWorker {
		t.Errorf("counter = %d, want %d (lost updates)", got, workers*perWorker)
	}
}

// TestDetectorControl shows the detector sees overlap when nothing locks:
// two handlers meet inside the critical section.
func TestDetectorControl(t *testing.T) {
	e := newEnv(t)
	var d detector
	impl := &inventory{reserve: func(ctx context.Context, _ *testpb.ReserveRequest) (*testpb.ReserveResponse, error) {
		d.enter()
		defer d.leave()
		for d.max.Load() < 2 && ctx.Err() == nil { // max is sticky: the peer may leave first
			runtime.Gosched()
		}
		return &testpb.ReserveResponse{}, ctx.Err()
	}}
	client := e.serve(t, impl, nil) // no rule for Reserve
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if _, err := client.Reserve(ctx, &testpb.ReserveRequest{Sku: "hot"}); err != nil {
				t.Errorf("Reserve: %v", err)
			}
		})
	}
	wg.Wait()
	if got := d.max.Load(); got != 2 {
		t.Errorf("max holders without a lock = %d, want 2: the detector does not see overlap", got)
	}
}

func TestParallelAcrossKeys(t *testing.T) {
	e := newEnv(t)
	in := make(chan string, 2)
	both := make(chan struct{})
	impl := &inventory{reserve: func(ctx context.Context, req *testpb.ReserveRequest) (*testpb.ReserveResponse, error) {
		in <- req.GetSku()
		select {
		case <-both: // the other handler is inside too
			return &testpb.ReserveResponse{Token: tokenOf(ctx)}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}}
	// wait 0: if the two keys shared a lock, one call would fail at once.
	client := e.serve(t, impl, Rules{methodReserve: `key:"sku:{req.sku}"`})
	ctx := testCtx(t)
	done := make(chan error, 2)
	for _, sku := range []string{"a", "b"} {
		go func() {
			_, err := client.Reserve(ctx, &testpb.ReserveRequest{Sku: sku})
			done <- err
		}()
	}
	recv(t, in, "first handler")
	recv(t, in, "second handler while the first holds its lock")
	close(both)
	for range 2 {
		if err := recv(t, done, "call"); err != nil {
			t.Errorf("Reserve: %v", err)
		}
	}
}

func TestBusyAborted(t *testing.T) {
	e := newEnv(t)
	impl := &inventory{}
	client := e.serve(t, impl, Rules{methodReserve: `key:"sku:{req.sku}" name:"reserve"`}, guard.WithRetryAfter(250*time.Millisecond))
	ctx := testCtx(t)
	held := e.hold(t, "sku:secret-sku")

	_, err := client.Reserve(ctx, &testpb.ReserveRequest{Sku: "secret-sku"})
	st := wantCode(t, err, codes.Aborted)
	noLeak(t, st.Message(), "secret-sku", e.redis.Addr())
	ei := errorInfo(st)
	if ei == nil || ei.Reason != ReasonBusy || ei.Domain != ErrorDomain || ei.Metadata["lockName"] != "reserve" {
		t.Errorf("ErrorInfo = %v, want reason %s domain %s lockName reserve", ei, ReasonBusy, ErrorDomain)
	}
	var ri *errdetails.RetryInfo
	for _, d := range st.Details() {
		if r, ok := d.(*errdetails.RetryInfo); ok {
			ri = r
		}
	}
	if ri == nil || ri.GetRetryDelay().AsDuration() != 250*time.Millisecond {
		t.Errorf("RetryInfo = %v, want 250ms", ri)
	}
	if n := impl.calls.Load(); n != 0 {
		t.Fatalf("handler ran %d times without the lock", n)
	}

	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	resp, err := client.Reserve(ctx, &testpb.ReserveRequest{Sku: "secret-sku"})
	if err != nil || resp.Token <= held.Token() {
		t.Fatalf("after release: resp %v, err %v; want a token above %d", resp, err, held.Token())
	}
}

func TestWaitThenRun(t *testing.T) {
	e := newEnv(t)
	client := e.serve(t, &inventory{}, Rules{methodReserve: `key:"sku:{req.sku}" wait:"10s"`})
	ctx := testCtx(t)
	held := e.hold(t, "sku:w")
	done := make(chan error, 1)
	go func() {
		_, err := client.Reserve(ctx, &testpb.ReserveRequest{Sku: "w"})
		done <- err
	}()
	// The call is waiting once it is in the lock's waiter queue (the zset
	// beside the lock hash, see locker's doc: same hash tag, suffix ":q").
	waitFor(t, "the call to queue for the lock", func() bool {
		n, err := e.redis.Do("ZCARD", "locktag:{sku:w}:q")
		return err == nil && n.(int64) == 1
	})
	select {
	case err := <-done:
		t.Fatalf("call returned while the lock was held: %v", err)
	default:
	}
	_ = held.Release(ctx)
	if err := recv(t, done, "waiting call"); err != nil {
		t.Fatalf("waiting call: %v", err)
	}
}

func TestInvalidArgument(t *testing.T) {
	e := newEnv(t)
	impl := &inventory{}
	tests := []struct {
		name, tag string
		req       *testpb.ReserveRequest
		opts      []Option
		field     string // BadRequest field, "" for none
	}{
		{"empty sku", `key:"sku:{req.sku}"`, &testpb.ReserveRequest{}, nil, "sku"},
		{"unset item", `key:"sku:{req.item.sku}"`, &testpb.ReserveRequest{Sku: "x"}, nil, "item.sku"},
		{"empty item sku", `key:"sku:{req.item.sku}"`, &testpb.ReserveRequest{Item: &testpb.Item{}}, nil, "item.sku"},
		{"zero qty", `key:"q:{req.qty}"`, &testpb.ReserveRequest{}, nil, "qty"},
		{"too long", `key:"sku:{req.sku}"`, &testpb.ReserveRequest{Sku: "123456789"}, []Option{guard.WithMaxValueLen(8)}, "sku"},
		{"no metadata", `key:"u:{md.x-user}"`, &testpb.ReserveRequest{Sku: "x"}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := e.serve(t, impl, Rules{methodReserve: tt.tag}, tt.opts...)
			_, err := client.Reserve(testCtx(t), tt.req)
			st := wantCode(t, err, codes.InvalidArgument)
			noLeak(t, st.Message(), "123456789")
			var got string
			for _, d := range st.Details() {
				if br, ok := d.(*errdetails.BadRequest); ok && len(br.FieldViolations) > 0 {
					got = br.FieldViolations[0].Field
				}
			}
			if got != tt.field {
				t.Errorf("BadRequest field = %q, want %q (status %v)", got, tt.field, st)
			}
		})
	}
	if n := impl.calls.Load(); n != 0 {
		t.Fatalf("handler ran %d times", n)
	}
}

// TestWaitEndsWithCall calls the interceptor directly, so the status is the
// server's and not the client's own deadline.
func TestWaitEndsWithCall(t *testing.T) {
	e := newEnv(t)
	ic, err := New(e.lk, Rules{methodReserve: `key:"sku:{req.sku}" wait:"1m"`})
	if err != nil {
		t.Fatal(err)
	}
	e.hold(t, "sku:d")
	info := &grpc.UnaryServerInfo{FullMethod: methodReserve}
	handler := func(context.Context, any) (any, error) {
		t.Error("handler ran without the lock")
		return nil, nil
	}
	req := &testpb.ReserveRequest{Sku: "d"}

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = ic.Unary()(ctx, req, info, handler)
	wantCode(t, err, codes.DeadlineExceeded)

	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	_, err = ic.Unary()(ctx, req, info, handler)
	wantCode(t, err, codes.Canceled)
}

func TestUnavailable(t *testing.T) {
	e := newEnv(t, locker.WithCallTimeout(500*time.Millisecond))
	closed := &inventory{}
	clientClosed := e.serve(t, closed, Rules{methodReserve: `key:"sku:{req.sku}"`})
	open := &inventory{}
	clientOpen := e.serve(t, open, Rules{methodReserve: `key:"sku:{req.sku}"`}, WithFailOpenFor(methodReserve))
	addr := e.redis.Addr()
	e.redis.Stop()
	ctx := testCtx(t)

	_, err := clientClosed.Reserve(ctx, &testpb.ReserveRequest{Sku: "u"})
	st := wantCode(t, err, codes.Unavailable)
	noLeak(t, st.Message(), addr, "127.0.0.1", "sku:u")
	if ei := errorInfo(st); ei == nil || ei.Reason != ReasonUnavailable {
		t.Errorf("ErrorInfo = %v, want reason %s", ei, ReasonUnavailable)
	}
	if n := closed.calls.Load(); n != 0 {
		t.Fatalf("fail-closed handler ran %d times", n)
	}

	resp, err := clientOpen.Reserve(ctx, &testpb.ReserveRequest{Sku: "u"})
	if err != nil || resp.Token != 0 {
		t.Fatalf("fail-open: resp %v, err %v; want the handler to run without a lease", resp, err)
	}
	// Fail-open is for Redis failures only: Restock (proto option) fails closed.
	_, err = clientOpen.Restock(ctx, &testpb.ReserveRequest{Item: &testpb.Item{Sku: "u"}})
	wantCode(t, err, codes.Unavailable)
}

func TestLockLost(t *testing.T) {
	tests := []struct {
		name   string
		tag    string
		lose   func(e *env) // makes the held lock lost
		answer string       // what the handler returns after the loss: "error", "response", "nil"
		want   codes.Code
	}{
		{"expire runs out", `key:"sku:{req.sku}" expire:"150ms"`, nil, "error", codes.Aborted},
		{"key deleted in redis", `key:"sku:{req.sku}"`, func(e *env) { _, _ = e.redis.Do("DEL", "locktag:{sku:lost}") }, "error", codes.Aborted},
		{"handler answers anyway", `key:"sku:{req.sku}" expire:"150ms"`, nil, "response", codes.OK},
		{"handler returns nothing", `key:"sku:{req.sku}" expire:"150ms"`, nil, "nil", codes.Aborted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, locker.WithWatchdog(300*time.Millisecond, 50*time.Millisecond))
			entered := make(chan struct{})
			causes := make(chan error, 1)
			impl := &inventory{reserve: func(ctx context.Context, _ *testpb.ReserveRequest) (*testpb.ReserveResponse, error) {
				close(entered)
				<-ctx.Done() // bounded by the client's deadline
				causes <- context.Cause(ctx)
				switch tt.answer {
				case "response":
					return &testpb.ReserveResponse{Token: 7}, nil
				case "nil":
					return nil, nil
				}
				return nil, ctx.Err()
			}}
			client := e.serve(t, impl, Rules{methodReserve: tt.tag})
			done := make(chan error, 1)
			go func() {
				_, err := client.Reserve(testCtx(t), &testpb.ReserveRequest{Sku: "lost"})
				done <- err
			}()
			recv(t, entered, "handler")
			if tt.lose != nil {
				tt.lose(e)
			}
			if cause := recv(t, causes, "handler's context to end"); !errors.Is(cause, locker.ErrLockLost) {
				t.Errorf("handler context cause = %v, want %v", cause, locker.ErrLockLost)
			}
			err := recv(t, done, "call")
			if st := wantCode(t, err, tt.want); tt.want == codes.Aborted {
				if ei := errorInfo(st); ei == nil || ei.Reason != ReasonLost {
					t.Errorf("ErrorInfo = %v, want reason %s", ei, ReasonLost)
				}
			}
		})
	}
}

func TestPanicReleases(t *testing.T) {
	e := newEnv(t)
	ic, err := New(e.lk, Rules{methodReserve: `key:"sku:{req.sku}"`})
	if err != nil {
		t.Fatal(err)
	}
	recovered := make(chan any, 1)
	recovery := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
		defer func() {
			if p := recover(); p != nil {
				recovered <- p
				err = status.Error(codes.Internal, "panic")
			}
		}()
		return h(ctx, req)
	}
	impl := &inventory{reserve: func(context.Context, *testpb.ReserveRequest) (*testpb.ReserveResponse, error) {
		panic("boom")
	}}
	client := startServer(t, impl, grpc.ChainUnaryInterceptor(recovery, ic.Unary()))
	_, err = client.Reserve(testCtx(t), &testpb.ReserveRequest{Sku: "p"})
	wantCode(t, err, codes.Internal)
	if p := recv(t, recovered, "recovered panic"); p != "boom" {
		t.Errorf("recovered %v, want boom", p)
	}
	if n, err := e.redis.Do("EXISTS", "locktag:{sku:p}"); err != nil || n.(int64) != 0 {
		t.Fatalf("lock key after panic: exists=%v err=%v, want released", n, err)
	}
	le, err := e.lk.Obtain(testCtx(t), "sku:p", locker.Params{})
	if err != nil {
		t.Fatalf("Obtain after panic: %v", err)
	}
	_ = le.Release(context.Background())
}
