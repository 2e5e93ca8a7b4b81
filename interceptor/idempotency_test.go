package interceptor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/locktag/locktag/interceptor/internal/rpccore/testpb"
	"github.com/locktag/locktag/interceptor/internal/testpbgrpc"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// userScope scopes keys by x-user metadata (a stand-in for real auth).
var userScope = guard.WithScope(func(ctx context.Context) (string, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get("x-user"); len(v) == 1 {
		return v[0], nil
	}
	return "", nil
})

// recoverPanics turns a handler panic into Internal, as a recovery
// interceptor would (grpc-go itself does not recover).
func recoverPanics(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
	defer func() {
		if r := recover(); r != nil {
			resp, err = nil, status.Errorf(codes.Internal, "panic: %v", r)
		}
	}()
	return h(ctx, req)
}

// idemServe serves impl behind a panic recovery, the guard on Reserve built
// with lk and opts, and the interceptors in after; it returns a client.
func idemServe(t testing.TB, lk *locker.Locker, impl *inventory, after []grpc.UnaryServerInterceptor, opts ...Option) testpbgrpc.InventoryClient {
	t.Helper()
	g, err := NewIdempotency(lk, []string{methodReserve}, append([]Option{userScope}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	chain := append([]grpc.UnaryServerInterceptor{recoverPanics, g.Unary()}, after...)
	return startServer(t, impl, grpc.ChainUnaryInterceptor(chain...))
}

// counting answers with the number of its execution.
func counting(impl *inventory) func(context.Context, *testpb.ReserveRequest) (*testpb.ReserveResponse, error) {
	return func(ctx context.Context, req *testpb.ReserveRequest) (*testpb.ReserveResponse, error) {
		return &testpb.ReserveResponse{Token: impl.calls.Load()}, nil
	}
}

type callResult struct {
	resp            *testpb.ReserveResponse
	err             error
	header, trailer metadata.MD
}

func (r callResult) replayed() bool {
	return len(r.header.Get(ReplayedMetadata)) == 1 && len(r.trailer.Get(ReplayedMetadata)) == 1
}

func reserve(t testing.TB, c testpbgrpc.InventoryClient, key, user string, req *testpb.ReserveRequest) callResult {
	kv := []string{"x-user", user}
	if key != "" {
		kv = append(kv, IdempotencyKeyMetadata, key)
	}
	ctx, cancel := context.WithTimeout(metadataCtx(context.Background(), kv...), 20*time.Second)
	defer cancel()
	var r callResult
	r.resp, r.err = c.Reserve(ctx, req, grpc.Header(&r.header), grpc.Trailer(&r.trailer))
	return r
}

func sku(s string) *testpb.ReserveRequest { return &testpb.ReserveRequest{Sku: s, Qty: 1} }

// sameOutcome fails unless replay repeats first, marked as a replay.
func sameOutcome(t *testing.T, first, replay callResult) {
	t.Helper()
	if !replay.replayed() {
		t.Fatalf("replay without %s: header %v trailer %v", ReplayedMetadata, replay.header, replay.trailer)
	}
	if first.replayed() {
		t.Fatal("the first call is marked as a replay")
	}
	if !proto.Equal(first.resp, replay.resp) || !proto.Equal(status.Convert(first.err).Proto(), status.Convert(replay.err).Proto()) {
		t.Fatalf("replay %v %v, first %v %v", replay.resp, replay.err, first.resp, first.err)
	}
}

func wantReason(t *testing.T, err error, c codes.Code, reason string) {
	t.Helper()
	st := wantCode(t, err, c)
	if ei := errorInfo(st); ei == nil || ei.Reason != reason || ei.Domain != ErrorDomain {
		t.Fatalf("status %v: ErrorInfo %v, want reason %s", st, ei, reason)
	}
}

func TestIdempotencyUnaryReplay(t *testing.T) {
	e := newEnv(t)
	impl := &inventory{}
	impl.reserve = counting(impl)
	c := idemServe(t, e.lk, impl, nil)
	first := reserve(t, c, "k1", "alice", sku("a"))
	if first.err != nil || first.resp.Token != 1 {
		t.Fatalf("first: %v %v", first.resp, first.err)
	}
	sameOutcome(t, first, reserve(t, c, "k1", "alice", sku("a")))
	sameOutcome(t, first, reserve(t, c, `"k1"`, "alice", sku("a")))
	wantReason(t, reserve(t, c, "k1", "alice", sku("b")).err, codes.FailedPrecondition, ReasonKeyReused)

	// An error status with details is an outcome too, replayed as it was.
	impl.reserve = func(context.Context, *testpb.ReserveRequest) (*testpb.ReserveResponse, error) {
		return nil, withDetails(codes.NotFound, "no such sku", &errdetails.ResourceInfo{ResourceName: "sku"})
	}
	nf := reserve(t, c, "k2", "alice", sku("x"))
	wantCode(t, nf.err, codes.NotFound)
	sameOutcome(t, nf, reserve(t, c, "k2", "alice", sku("x")))
	if n := impl.calls.Load(); n != 2 {
		t.Fatalf("%d executions, want 2", n)
	}
}

func TestIdempotencyUnaryScope(t *testing.T) {
	e := newEnv(t)
	impl := &inventory{}
	impl.reserve = counting(impl)
	c := idemServe(t, e.lk, impl, nil)
	a := reserve(t, c, "shared", "alice", sku("a"))
	b := reserve(t, c, "shared", "bob", sku("a"))
	if b.err != nil || b.replayed() || b.resp.Token == a.resp.Token {
		t.Fatalf("bob got alice's outcome: %v %v", b.resp, b.err)
	}
	sameOutcome(t, a, reserve(t, c, "shared", "alice", sku("a")))
	wantReason(t, reserve(t, c, "shared", "", sku("a")).err, codes.Unauthenticated, ReasonScopeUnresolved)
}

// scripts counts the scripts Redis has run.
func scripts(t *testing.T, srv *redistest.Server) int {
	t.Helper()
	s, err := redis.String(srv.Do("INFO", "commandstats"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for line := range strings.Lines(s) {
		if _, rest, ok := strings.Cut(line, "cmdstat_eval"); ok {
			var calls int
			_, _ = fmt.Sscanf(rest[strings.Index(rest, "calls=")+6:], "%d", &calls)
			n += calls
		}
	}
	return n
}

func TestIdempotencyUnaryBadKeys(t *testing.T) {
	e := newEnv(t)
	impl := &inventory{}
	c := idemServe(t, e.lk, impl, nil, guard.WithMaxKeyLen(8))
	before := scripts(t, e.redis)
	wantReason(t, reserve(t, c, "", "alice", sku("a")).err, codes.InvalidArgument, ReasonKeyMissing)
	for _, key := range []string{"123456789", `"open`, "two words", `"bad\x"`} {
		wantReason(t, reserve(t, c, key, "alice", sku("a")).err, codes.InvalidArgument, ReasonKeyInvalid)
	}
	ctx := metadataCtx(context.Background(), "x-user", "alice", IdempotencyKeyMetadata, "a", IdempotencyKeyMetadata, "b")
	_, err := c.Reserve(ctx, sku("a"))
	wantReason(t, err, codes.InvalidArgument, ReasonKeyInvalid)
	if after := scripts(t, e.redis); after != before || impl.calls.Load() != 0 {
		t.Fatalf("bad keys reached Redis (%d scripts) or the handler (%d)", after-before, impl.calls.Load())
	}
}

func TestIdempotencyUnaryOptionalKey(t *testing.T) {
	e := newEnv(t)
	impl := &inventory{}
	c := idemServe(t, e.lk, impl, nil, guard.WithOptionalKey())
	for range 2 {
		if r := reserve(t, c, "", "alice", sku("a")); r.err != nil {
			t.Fatal(r.err)
		}
	}
	if impl.calls.Load() != 2 {
		t.Fatal("calls without a key were not run unguarded")
	}
}

func TestNewIdempotencyErrors(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name    string
		methods []string
		opts    []Option
		want    error
	}{
		{"no scope", []string{methodReserve}, nil, guard.ErrNoScope},
		{"scope and public", []string{methodReserve}, []Option{userScope, guard.WithPublicScope()}, locker.ErrBadOption},
		{"stream", []string{methodWatch}, []Option{userScope}, ErrUnknownMethod},
		{"unknown", []string{"/x.Y/Z"}, []Option{userScope}, ErrUnknownMethod},
		{"bad lease", []string{methodReserve}, []Option{userScope, guard.WithInFlightLease(0)}, locker.ErrBadOption},
	} {
		if _, err := NewIdempotency(e.lk, tc.methods, tc.opts...); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

func TestIdempotencyUnaryPanicFreesKey(t *testing.T) {
	e := newEnv(t)
	impl := &inventory{}
	var fail atomic.Bool
	fail.Store(true)
	impl.reserve = func(ctx context.Context, req *testpb.ReserveRequest) (*testpb.ReserveResponse, error) {
		if fail.Load() {
			panic("boom")
		}
		return counting(impl)(ctx, req)
	}
	c := idemServe(t, e.lk, impl, nil)
	wantCode(t, reserve(t, c, "k", "alice", sku("a")).err, codes.Internal)
	fail.Store(false)
	retry := reserve(t, c, "k", "alice", sku("a"))
	if retry.err != nil || retry.replayed() {
		t.Fatalf("retry after a panic: %v, replayed %v", retry.err, retry.replayed())
	}
	sameOutcome(t, retry, reserve(t, c, "k", "alice", sku("a")))
}
