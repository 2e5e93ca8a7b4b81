package interceptor

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locktag/locktag/interceptor/internal/rpccore/testpb"
	"github.com/locktag/locktag/interceptor/internal/testpbgrpc"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/locker/guard/retry"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"
)

// clientFor serves impl behind the server interceptors and returns a
// client whose calls go through the client interceptors.
func clientFor(t *testing.T, impl testpbgrpc.InventoryServer, server []grpc.UnaryServerInterceptor, client ...grpc.UnaryClientInterceptor) testpbgrpc.InventoryClient {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	s := grpc.NewServer(grpc.ChainUnaryInterceptor(server...))
	testpbgrpc.RegisterInventoryServer(s, impl)
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithChainUnaryInterceptor(client...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return testpbgrpc.NewInventoryClient(conn)
}

// scriptedCalls answers the i-th call with errs[i] (the last after that;
// nil: a response) and records each call's time and key.
type scriptedCalls struct {
	mu   sync.Mutex
	errs []error
	at   []time.Time
	keys []string
}

func (s *scriptedCalls) reserve(ctx context.Context, _ *testpb.ReserveRequest) (*testpb.ReserveResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	i := min(len(s.at), len(s.errs)-1)
	s.at = append(s.at, time.Now())
	s.keys = append(s.keys, md.Get(IdempotencyKeyMetadata)...)
	if err := s.errs[i]; err != nil {
		return nil, err
	}
	return &testpb.ReserveResponse{Token: int64(len(s.at))}, nil
}

func (s *scriptedCalls) calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.at)
}

// refusal is a status with code c, an ErrorInfo reason (if any) and a
// RetryInfo delay (if positive).
func refusal(c codes.Code, reason string, delay time.Duration) error {
	st := status.New(c, "refused")
	var details []protoadapt.MessageV1
	if reason != "" {
		details = append(details, &errdetails.ErrorInfo{Domain: "locktag", Reason: reason})
	}
	if delay > 0 {
		details = append(details, &errdetails.RetryInfo{RetryDelay: durationpb.New(delay)})
	}
	if len(details) > 0 {
		st, _ = st.WithDetails(details...)
	}
	return st.Err()
}

func quickPolicy(opts ...retry.Option) *retry.Policy {
	return retry.New(append([]retry.Option{retry.WithBackoff(time.Millisecond, 5*time.Millisecond), retry.WithMaxRetryAfter(20 * time.Millisecond)}, opts...)...)
}

func scriptedClient(t *testing.T, p *retry.Policy, errs ...error) (*scriptedCalls, testpbgrpc.InventoryClient) {
	s := &scriptedCalls{errs: errs}
	return s, clientFor(t, &inventory{reserve: s.reserve}, nil, IdempotentUnaryClientInterceptor(p))
}

func TestIdempotentClientCodes(t *testing.T) {
	cases := []struct {
		name  string
		first error
		opts  []retry.Option
		code  codes.Code
		calls int
	}{
		{"Unavailable", status.Error(codes.Unavailable, "down"), nil, codes.OK, 2},
		{"ResourceExhausted with RetryInfo", refusal(codes.ResourceExhausted, "RATE_LIMITED", time.Second), nil, codes.OK, 2},
		{"ResourceExhausted without RetryInfo", refusal(codes.ResourceExhausted, "", 0), nil, codes.ResourceExhausted, 1},
		{"Aborted in flight", refusal(codes.Aborted, "IDEMPOTENCY_KEY_IN_FLIGHT", time.Second), nil, codes.OK, 2},
		{"Aborted lock busy", refusal(codes.Aborted, "LOCK_BUSY", time.Second), nil, codes.Aborted, 1},
		{"Aborted lock busy, WithRetryBusy", refusal(codes.Aborted, "LOCK_BUSY", time.Second), []retry.Option{retry.WithRetryBusy(true)}, codes.OK, 2},
		{"FailedPrecondition", status.Error(codes.FailedPrecondition, "no"), nil, codes.FailedPrecondition, 1},
		{"NotFound", status.Error(codes.NotFound, "no"), nil, codes.NotFound, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, client := scriptedClient(t, quickPolicy(c.opts...), c.first, nil)
			_, err := client.Reserve(t.Context(), sku("a"))
			if status.Code(err) != c.code || s.calls() != c.calls {
				t.Fatalf("%v after %d calls, want %v after %d", err, s.calls(), c.code, c.calls)
			}
			for _, k := range s.keys {
				if k != s.keys[0] || len(k) < 3 || k[0] != '"' {
					t.Fatalf("keys %q: want one quoted key on every attempt", s.keys)
				}
			}
		})
	}
	t.Run("the caller's key is kept", func(t *testing.T) {
		s, client := scriptedClient(t, quickPolicy(), status.Error(codes.Unavailable, "down"), nil)
		if _, err := client.Reserve(metadataCtx(t.Context(), IdempotencyKeyMetadata, "mine"), sku("a")); err != nil || len(s.keys) != 2 || s.keys[1] != "mine" {
			t.Fatalf("%v, keys %q", err, s.keys)
		}
	})
	t.Run("other methods pass through", func(t *testing.T) {
		s := &scriptedCalls{errs: []error{status.Error(codes.Unavailable, "down"), nil}}
		client := clientFor(t, &inventory{reserve: s.reserve}, nil, IdempotentUnaryClientInterceptor(quickPolicy(), methodRestock))
		if _, err := client.Reserve(t.Context(), sku("a")); status.Code(err) != codes.Unavailable || s.calls() != 1 || len(s.keys) != 0 {
			t.Fatalf("%v after %d calls, keys %q", err, s.calls(), s.keys)
		}
	})
}

// RetryInfo is waited for in full, up to WithMaxRetryAfter.
func TestIdempotentClientRetryInfo(t *testing.T) {
	var delays []time.Duration
	record := retry.WithOnRetry(func(e retry.Event) { delays = append(delays, e.Delay) })
	s, client := scriptedClient(t, retry.New(retry.WithBackoff(time.Millisecond, time.Millisecond), record),
		refusal(codes.Unavailable, "LOCK_UNAVAILABLE", time.Second), nil)
	if _, err := client.Reserve(t.Context(), sku("a")); err != nil {
		t.Fatal(err)
	}
	if gap := s.at[1].Sub(s.at[0]); gap < time.Second || delays[0] != time.Second {
		t.Fatalf("RetryInfo 1s: waited %v (announced %v)", gap, delays)
	}
	delays = nil
	s, client = scriptedClient(t, quickPolicy(record), refusal(codes.ResourceExhausted, "RATE_LIMITED", time.Hour), nil)
	if _, err := client.Reserve(t.Context(), sku("a")); err != nil || s.calls() != 2 || len(delays) != 1 || delays[0] != 20*time.Millisecond {
		t.Fatalf("RetryInfo 1h: %v, delays %v, want the 20ms cap", err, delays)
	}
}

func TestIdempotentClientGivesUp(t *testing.T) {
	s, client := scriptedClient(t, quickPolicy(retry.WithMaxAttempts(3)), status.Error(codes.Unavailable, "down"))
	_, err := client.Reserve(t.Context(), sku("a"))
	if !errors.Is(err, ErrBudgetExhausted) || status.Code(err) != codes.Unavailable || s.calls() != 3 {
		t.Fatalf("%v (code %v) after %d calls", err, status.Code(err), s.calls())
	}
	re := new(RetryError)
	if !errors.As(err, &re) || re.Key != s.keys[0] || re.Attempts != 3 || !strings.Contains(status.Convert(err).Message(), "idempotency-key: "+re.Key) {
		t.Fatalf("%v: want a RetryError with the key sent, %q, and 3 attempts, its message the status's", err, s.keys[0])
	}

	ctx, cancel := context.WithCancel(t.Context())
	p := retry.New(retry.WithMaxRetryAfter(time.Minute), retry.WithBudget(time.Hour), retry.WithOnRetry(func(retry.Event) { cancel() }))
	s, client = scriptedClient(t, p, refusal(codes.Unavailable, "", 30*time.Second))
	start := time.Now()
	_, err = client.Reserve(ctx, sku("a"))
	if !errors.Is(err, context.Canceled) || status.Code(err) != codes.Canceled || s.calls() != 1 || time.Since(start) > 5*time.Second {
		t.Fatalf("cancelled: %v (code %v) after %d calls, %v", err, status.Code(err), s.calls(), time.Since(start))
	}
	if !errors.As(err, &re) || re.Key != s.keys[0] || re.Attempts != 1 {
		t.Fatalf("cancelled: %v, want a RetryError with the key sent, %q", err, s.keys[0])
	}

	// The deadline ends an attempt: whether it ran is unknown, so the
	// error carries the key too.
	// The handler outlives the deadline: the client's context ends the
	// attempt, or the server's deadline does (DeadlineExceeded).
	var seen atomic.Value
	release := make(chan struct{})
	block := func(ctx context.Context, _ *testpb.ReserveRequest) (*testpb.ReserveResponse, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		seen.Store(md.Get(IdempotencyKeyMetadata)[0])
		<-release
		return nil, ctx.Err()
	}
	defer close(release)
	client = clientFor(t, &inventory{reserve: block}, nil, IdempotentUnaryClientInterceptor(quickPolicy()))
	dctx, dcancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer dcancel()
	_, err = client.Reserve(dctx, sku("a"))
	if !errors.As(err, &re) || re.Key != seen.Load() || re.Attempts != 1 || status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("deadline: %v (code %v): want a RetryError with the key sent, %v", err, status.Code(err), seen.Load())
	}
}

// Against the guard on Redis: a retry while the key's first call runs gets
// Aborted and waits, then the first call's answer; a key reused with
// another request is ErrKeyReused.
func TestIdempotentClientGuard(t *testing.T) {
	e := newEnv(t)
	g, err := NewIdempotency(e.lk, []string{methodReserve}, guard.WithPublicScope())
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var entered, runs atomic.Int64
	impl := &inventory{reserve: func(ctx context.Context, req *testpb.ReserveRequest) (*testpb.ReserveResponse, error) {
		n := runs.Add(1)
		if req.GetSku() == "slow" {
			entered.Add(1)
			<-release
		}
		return &testpb.ReserveResponse{Token: n}, nil
	}}
	var inFlight atomic.Int32
	p := retry.New(retry.WithBackoff(time.Millisecond, 5*time.Millisecond), retry.WithMaxRetryAfter(20*time.Millisecond),
		retry.WithMaxAttempts(1000), retry.WithOnRetry(func(e retry.Event) {
			if e.Class == retry.InFlight && e.Hint == time.Second && inFlight.Add(1) == 1 {
				close(release)
			}
		}))
	plain := clientFor(t, impl, []grpc.UnaryServerInterceptor{g.Unary()})
	client := clientFor(t, impl, []grpc.UnaryServerInterceptor{g.Unary()}, IdempotentUnaryClientInterceptor(p))
	key := retry.FormatKey(retry.NewKey())
	ctx := metadataCtx(t.Context(), IdempotencyKeyMetadata, key)

	first := make(chan int64, 1)
	go func() {
		resp, err := plain.Reserve(ctx, sku("slow"))
		if err != nil {
			t.Error(err)
		}
		first <- resp.GetToken()
	}()
	waitFor(t, "the first call runs", func() bool { return entered.Load() == 1 })
	var header metadata.MD
	resp, err := client.Reserve(ctx, sku("slow"), grpc.Header(&header))
	if err != nil {
		t.Fatal(err)
	}
	if tok := <-first; resp.GetToken() != tok || tok != 1 || inFlight.Load() < 1 || runs.Load() != 1 || len(header.Get(ReplayedMetadata)) != 1 {
		t.Fatalf("token %d (first %d), %d Aborted, %d runs, header %v", resp.GetToken(), tok, inFlight.Load(), runs.Load(), header)
	}

	_, err = client.Reserve(ctx, sku("other"))
	if !errors.Is(err, ErrKeyReused) || status.Code(err) != codes.FailedPrecondition || runs.Load() != 1 {
		t.Fatalf("another request, same key: %v (code %v)", err, status.Code(err))
	}
}
