package interceptor

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/locktag/locktag/interceptor/internal/rpccore/testpb"
	"github.com/locktag/locktag/interceptor/internal/testpbgrpc"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/locker/guard/retry"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// connListener remembers its connections by the client's address, so a
// test can cut the one a call came on.
type connListener struct {
	net.Listener
	mu    sync.Mutex
	conns map[string]net.Conn
}

func (l *connListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.mu.Lock()
		l.conns[c.RemoteAddr().String()] = c
		l.mu.Unlock()
	}
	return c, err
}

func (l *connListener) cut(addr string) {
	l.mu.Lock()
	c := l.conns[addr]
	l.mu.Unlock()
	if c != nil {
		_ = c.Close()
	}
}

// execLog counts executions per idempotency key and per operation (the
// request's sku, the same on every attempt of one operation) and keeps
// each operation's first answer.
type execLog struct {
	mu    sync.Mutex
	n     int64
	byKey map[string]int
	byOp  map[string]int
	first map[string]int64
}

func (e *execLog) Reserve(ctx context.Context, req *testpb.ReserveRequest) (*testpb.ReserveResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.n++
	e.byKey[fmt.Sprint(md.Get(IdempotencyKeyMetadata))]++
	e.byOp[req.GetSku()]++
	if _, ok := e.first[req.GetSku()]; !ok {
		e.first[req.GetSku()] = e.n
	}
	return &testpb.ReserveResponse{Token: e.n}, nil
}

func (e *execLog) exactlyOnce(ops []string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, op := range ops {
		if n := e.byOp[op]; n != 1 {
			return fmt.Errorf("operation %s executed %d times", op, n)
		}
	}
	for k, n := range e.byKey {
		if n != 1 {
			return fmt.Errorf("key %s executed %d times", k, n)
		}
	}
	return nil
}

// dropFirstAnswer, the outermost server interceptor, lets each call run
// and then, for the first answer of each operation, cuts the connection
// the call came on: the answer is produced and never delivered. (A cut
// also ends the other calls on that connection; they are retried too.)
func dropFirstAnswer(l *connListener) grpc.UnaryServerInterceptor {
	var mu sync.Mutex
	seen := map[string]bool{}
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		resp, err := h(ctx, req)
		op := req.(*testpb.ReserveRequest).GetSku()
		mu.Lock()
		drop := err == nil && !seen[op] // an answer, not a refusal or a call cut short by another's drop
		if drop {
			seen[op] = true
		}
		mu.Unlock()
		if drop {
			p, _ := peer.FromContext(ctx)
			l.cut(p.Addr.String())
			return nil, status.Error(codes.Unavailable, "answer dropped")
		}
		return resp, err
	}
}

// freshKeyPerAttempt is the broken client the control uses: below the
// retrying interceptor, it replaces the key on every attempt.
func freshKeyPerAttempt(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	md, _ := metadata.FromOutgoingContext(ctx)
	md = md.Copy()
	md.Set(IdempotencyKeyMetadata, retry.FormatKey(retry.NewKey()))
	return invoker(metadata.NewOutgoingContext(ctx, md), method, req, reply, cc, opts...)
}

// Through a server that cuts the connection of every operation's first
// call after the guarded handler ran, the retrying client runs each
// operation exactly once and gets the first execution's answer, replayed;
// the control, whose key changes per attempt, runs each twice.
func TestIdempotentClientExactlyOnce(t *testing.T) {
	e := newEnv(t)
	// Many attempts: a cut also ends the calls of other operations on the
	// same connection, so one operation may lose several attempts.
	policy := retry.New(retry.WithBackoff(time.Millisecond, 10*time.Millisecond), retry.WithMaxAttempts(50))
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	ops := make([]string, 12)
	for i := range ops {
		ops[i] = run + "-" + strconv.Itoa(i)
	}
	serve := func(t *testing.T, client ...grpc.UnaryClientInterceptor) (*execLog, testpbgrpc.InventoryClient) {
		ex := &execLog{byKey: map[string]int{}, byOp: map[string]int{}, first: map[string]int64{}}
		g, err := NewIdempotency(e.lk, []string{methodReserve}, guard.WithPublicScope())
		if err != nil {
			t.Fatal(err)
		}
		tcp, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lis := &connListener{Listener: tcp, conns: map[string]net.Conn{}}
		s := grpc.NewServer(grpc.ChainUnaryInterceptor(dropFirstAnswer(lis), g.Unary()))
		testpbgrpc.RegisterInventoryServer(s, &inventory{reserve: ex.Reserve})
		go func() { _ = s.Serve(lis) }()
		t.Cleanup(s.Stop)
		conn, err := grpc.NewClient(tcp.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithChainUnaryInterceptor(client...))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = conn.Close() })
		return ex, testpbgrpc.NewInventoryClient(conn)
	}
	call := func(t *testing.T, c testpbgrpc.InventoryClient) map[string]callResult {
		var mu sync.Mutex
		out := map[string]callResult{}
		var wg sync.WaitGroup
		sem := make(chan struct{}, 4)
		for _, op := range ops {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				var r callResult
				r.resp, r.err = c.Reserve(t.Context(), sku(op), grpc.Header(&r.header), grpc.Trailer(&r.trailer))
				mu.Lock()
				out[op] = r
				mu.Unlock()
			})
		}
		wg.Wait()
		return out
	}

	t.Run("same key on every attempt", func(t *testing.T) {
		ex, c := serve(t, IdempotentUnaryClientInterceptor(policy))
		results := call(t, c)
		if err := ex.exactlyOnce(ops); err != nil {
			t.Fatal(err)
		}
		for _, op := range ops {
			r := results[op]
			ex.mu.Lock()
			first := ex.first[op]
			ex.mu.Unlock()
			if r.err != nil || r.resp.GetToken() != first || !r.replayed() {
				t.Errorf("%s: %v %v replayed=%v, want execution %d replayed", op, r.resp, r.err, r.replayed(), first)
			}
		}
	})

	t.Run("control: a new key per attempt", func(t *testing.T) {
		ex, c := serve(t, IdempotentUnaryClientInterceptor(policy), freshKeyPerAttempt)
		for op, r := range call(t, c) {
			if r.err != nil {
				t.Errorf("%s: %v", op, r.err)
			}
		}
		if err := ex.exactlyOnce(ops); err == nil {
			t.Fatal("the control ran every operation once: the test cannot catch a client that changes its key")
		}
		ex.mu.Lock()
		defer ex.mu.Unlock()
		for _, op := range ops {
			if ex.byOp[op] < 2 {
				t.Errorf("control: %s executed %d times, want at least 2", op, ex.byOp[op])
			}
		}
	})
}
