package interceptor

import (
	"context"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locktag/locktag/interceptor/internal/rpccore/testpb"
	"github.com/locktag/locktag/interceptor/internal/testpbgrpc"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/redigo"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
)

const (
	methodReserve = testpbgrpc.Inventory_Reserve_FullMethodName
	methodRestock = testpbgrpc.Inventory_Restock_FullMethodName
	methodWatch   = testpbgrpc.Inventory_Watch_FullMethodName
)

// inventory is the test service; nil hooks answer with the lease's token.
type inventory struct {
	testpbgrpc.UnimplementedInventoryServer
	reserve func(ctx context.Context, req *testpb.ReserveRequest) (*testpb.ReserveResponse, error)
	watch   func(stream testpbgrpc.Inventory_WatchServer) error
	calls   atomic.Int64
}

func tokenOf(ctx context.Context) int64 {
	if le := locker.FromContext(ctx); le != nil {
		return le.Token()
	}
	return 0
}

func (s *inventory) Reserve(ctx context.Context, req *testpb.ReserveRequest) (*testpb.ReserveResponse, error) {
	s.calls.Add(1)
	if s.reserve != nil {
		return s.reserve(ctx, req)
	}
	return &testpb.ReserveResponse{Token: tokenOf(ctx)}, nil
}

func (s *inventory) Restock(ctx context.Context, req *testpb.ReserveRequest) (*testpb.ReserveResponse, error) {
	return s.Reserve(ctx, req)
}

func (s *inventory) Watch(stream testpbgrpc.Inventory_WatchServer) error {
	s.calls.Add(1)
	if s.watch != nil {
		return s.watch(stream)
	}
	for {
		if _, err := stream.Recv(); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		if err := stream.Send(&testpb.WatchResponse{Token: tokenOf(stream.Context())}); err != nil {
			return err
		}
	}
}

// env is one test's Redis and Locker.
type env struct {
	redis *redistest.Server
	lk    *locker.Locker
}

func newEnv(t testing.TB, opts ...locker.Option) *env {
	t.Helper()
	srv := redistest.Start(t)
	lk, err := locker.New(redigo.New(srv.Pool(t)), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk.Close() })
	return &env{redis: srv, lk: lk}
}

// serve starts a gRPC server over bufconn with the interceptor built from
// rules and opts in front of impl, and returns a client.
func (e *env) serve(t testing.TB, impl *inventory, rules Rules, opts ...Option) testpbgrpc.InventoryClient {
	t.Helper()
	ic, err := New(e.lk, rules, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return startServer(t, impl, grpc.ChainUnaryInterceptor(ic.Unary()), grpc.ChainStreamInterceptor(ic.Stream()))
}

func startServer(t testing.TB, impl testpbgrpc.InventoryServer, opts ...grpc.ServerOption) testpbgrpc.InventoryClient {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	s := grpc.NewServer(opts...)
	testpbgrpc.RegisterInventoryServer(s, impl)
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("grpc.NewClient: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return testpbgrpc.NewInventoryClient(conn)
}

// hold takes the lock named name directly, as another process would.
func (e *env) hold(t *testing.T, name string) *locker.Lease {
	t.Helper()
	le, err := e.lk.Obtain(context.Background(), name, locker.Params{})
	if err != nil {
		t.Fatalf("Obtain(%q): %v", name, err)
	}
	t.Cleanup(func() { _ = le.Release(context.Background()) })
	return le
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// wantCode fails unless err is a status with code c; it returns the status.
func wantCode(t *testing.T, err error, c codes.Code) *status.Status {
	t.Helper()
	st, ok := status.FromError(err)
	if !ok || st.Code() != c {
		t.Fatalf("error = %v, want code %v", err, c)
	}
	return st
}

// errorInfo returns the status's ErrorInfo detail, or nil.
func errorInfo(st *status.Status) *errdetails.ErrorInfo {
	for _, d := range st.Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok {
			return ei
		}
	}
	return nil
}

// waitFor polls cond until it holds or 10s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.Eventually(t, what, cond)
}

// recv is testwait.Recv.
func recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	return testwait.Recv(t, ch, what)
}

// detector counts the handlers inside a critical section at once.
type detector struct {
	holders, max, entries atomic.Int64
}

func (d *detector) enter() {
	n := d.holders.Add(1)
	for m := d.max.Load(); n > m && !d.max.CompareAndSwap(m, n); m = d.max.Load() {
	}
	d.entries.Add(1)
}

func (d *detector) leave() { d.holders.Add(-1) }

// noLeak fails if msg contains any of the secrets.
func noLeak(t *testing.T, msg string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(msg, s) {
			t.Errorf("status message %q leaks %q", msg, s)
		}
	}
}

// metadataCtx adds outgoing metadata kv pairs to ctx.
func metadataCtx(ctx context.Context, kv ...string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, kv...)
}
