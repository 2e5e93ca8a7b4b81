package connectrpc_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/locktag/locktag/interceptor/connectrpc"
	"github.com/locktag/locktag/interceptor/connectrpc/internal/rpccore/testpb"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/locker/guard/retry"
)

type reserveClient = *connect.Client[testpb.ReserveRequest, testpb.ReserveResponse]

// scriptedCalls answers the i-th call with errs[i] (the last after that;
// nil: a response) and records each call's time and key headers.
type scriptedCalls struct {
	mu   sync.Mutex
	errs []error
	at   []time.Time
	keys [][]string
}

func (s *scriptedCalls) reserve(_ context.Context, r *connect.Request[testpb.ReserveRequest]) (*connect.Response[testpb.ReserveResponse], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := min(len(s.at), len(s.errs)-1)
	s.at = append(s.at, time.Now())
	s.keys = append(s.keys, r.Header().Values(connectrpc.IdempotencyKeyHeader))
	if err := s.errs[i]; err != nil {
		return nil, err
	}
	return connect.NewResponse(&testpb.ReserveResponse{Token: int64(len(s.at))}), nil
}

func (s *scriptedCalls) calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.at)
}

// refusal is an error with code c, an ErrorInfo reason (if any) and a
// RetryInfo delay (if positive).
func refusal(c connect.Code, reason string, delay time.Duration) error {
	ce := connect.NewError(c, errors.New("refused"))
	var details []proto.Message
	if reason != "" {
		details = append(details, &errdetails.ErrorInfo{Domain: "locktag", Reason: reason})
	}
	if delay > 0 {
		details = append(details, &errdetails.RetryInfo{RetryDelay: durationpb.New(delay)})
	}
	for _, d := range details {
		ed, err := connect.NewErrorDetail(d)
		if err != nil {
			panic(err)
		}
		ce.AddDetail(ed)
	}
	return ce
}

func quickPolicy(opts ...retry.Option) *retry.Policy {
	return retry.New(append([]retry.Option{retry.WithBackoff(time.Millisecond, 5*time.Millisecond), retry.WithMaxRetryAfter(20 * time.Millisecond)}, opts...)...)
}

// clientOf serves h, behind the handler options, for Reserve and returns
// a client with the interceptors.
func clientOf(t *testing.T, h func(context.Context, *connect.Request[testpb.ReserveRequest]) (*connect.Response[testpb.ReserveResponse], error), handler []connect.HandlerOption, interceptors ...connect.Interceptor) reserveClient {
	mux := http.NewServeMux()
	mux.Handle(reserve, connect.NewUnaryHandler(reserve, h, handler...))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return connect.NewClient[testpb.ReserveRequest, testpb.ReserveResponse](srv.Client(), srv.URL+reserve, connect.WithInterceptors(interceptors...))
}

func scriptedClient(t *testing.T, p *retry.Policy, errs ...error) (*scriptedCalls, reserveClient) {
	s := &scriptedCalls{errs: errs}
	return s, clientOf(t, s.reserve, nil, connectrpc.NewIdempotentClient(p))
}

func call(ctx context.Context, c reserveClient, sku string) (*connect.Response[testpb.ReserveResponse], error) {
	return c.CallUnary(ctx, connect.NewRequest(&testpb.ReserveRequest{Sku: sku}))
}

func TestIdempotentClientCodes(t *testing.T) {
	cases := []struct {
		name  string
		first error
		opts  []retry.Option
		code  connect.Code
		calls int
	}{
		{"Unavailable", connect.NewError(connect.CodeUnavailable, errors.New("down")), nil, 0, 2},
		{"ResourceExhausted with RetryInfo", refusal(connect.CodeResourceExhausted, "RATE_LIMITED", time.Second), nil, 0, 2},
		{"ResourceExhausted without RetryInfo", refusal(connect.CodeResourceExhausted, "", 0), nil, connect.CodeResourceExhausted, 1},
		{"Aborted in flight", refusal(connect.CodeAborted, "IDEMPOTENCY_KEY_IN_FLIGHT", time.Second), nil, 0, 2},
		{"Aborted lock busy", refusal(connect.CodeAborted, "LOCK_BUSY", time.Second), nil, connect.CodeAborted, 1},
		{"Aborted lock busy, WithRetryBusy", refusal(connect.CodeAborted, "LOCK_BUSY", time.Second), []retry.Option{retry.WithRetryBusy(true)}, 0, 2},
		{"FailedPrecondition", connect.NewError(connect.CodeFailedPrecondition, errors.New("no")), nil, connect.CodeFailedPrecondition, 1},
		{"NotFound", connect.NewError(connect.CodeNotFound, errors.New("no")), nil, connect.CodeNotFound, 1},
		// The server's own Unknown is an answer, not an answer lost on
		// the way: only the client's read failures are retried.
		{"Unknown from the server", connect.NewError(connect.CodeUnknown, io.ErrUnexpectedEOF), nil, connect.CodeUnknown, 1},
		{"Internal from the server", connect.NewError(connect.CodeInternal, io.ErrUnexpectedEOF), nil, connect.CodeInternal, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, client := scriptedClient(t, quickPolicy(c.opts...), c.first, nil)
			_, err := call(t.Context(), client, "a")
			if (err == nil) != (c.code == 0) || (err != nil && connect.CodeOf(err) != c.code) || s.calls() != c.calls {
				t.Fatalf("%v after %d calls, want code %v after %d", err, s.calls(), c.code, c.calls)
			}
			for _, k := range s.keys {
				if len(k) != 1 || k[0] != s.keys[0][0] || len(k[0]) < 3 || k[0][0] != '"' {
					t.Fatalf("keys %q: want one quoted key on every attempt", s.keys)
				}
			}
		})
	}
	t.Run("a minted key is not left on the request", func(t *testing.T) {
		s, client := scriptedClient(t, quickPolicy(), nil)
		req := connect.NewRequest(&testpb.ReserveRequest{Sku: "a"})
		for range 2 {
			if _, err := client.CallUnary(t.Context(), req); err != nil {
				t.Fatal(err)
			}
		}
		if len(s.keys) != 2 || s.keys[0][0] == s.keys[1][0] || req.Header().Get(connectrpc.IdempotencyKeyHeader) != "" {
			t.Fatalf("keys %q, left %q: want two operations, two keys", s.keys, req.Header().Get(connectrpc.IdempotencyKeyHeader))
		}
	})
	t.Run("the caller's key is kept", func(t *testing.T) {
		s, client := scriptedClient(t, quickPolicy(), connect.NewError(connect.CodeUnavailable, errors.New("down")), nil)
		req := connect.NewRequest(&testpb.ReserveRequest{Sku: "a"})
		req.Header().Set(connectrpc.IdempotencyKeyHeader, "mine")
		if _, err := client.CallUnary(t.Context(), req); err != nil || len(s.keys) != 2 || s.keys[1][0] != "mine" {
			t.Fatalf("%v, keys %q", err, s.keys)
		}
	})
	t.Run("other procedures pass through", func(t *testing.T) {
		s := &scriptedCalls{errs: []error{connect.NewError(connect.CodeUnavailable, errors.New("down")), nil}}
		client := clientOf(t, s.reserve, nil, connectrpc.NewIdempotentClient(quickPolicy(), restock))
		if _, err := call(t.Context(), client, "a"); connect.CodeOf(err) != connect.CodeUnavailable || s.calls() != 1 || len(s.keys[0]) != 0 {
			t.Fatalf("%v after %d calls, keys %q", err, s.calls(), s.keys)
		}
	})
}

// RetryInfo is waited for in full, up to WithMaxRetryAfter.
func TestIdempotentClientRetryInfo(t *testing.T) {
	var delays []time.Duration
	record := retry.WithOnRetry(func(e retry.Event) { delays = append(delays, e.Delay) })
	s, client := scriptedClient(t, retry.New(retry.WithBackoff(time.Millisecond, time.Millisecond), record),
		refusal(connect.CodeUnavailable, "LOCK_UNAVAILABLE", time.Second), nil)
	if _, err := call(t.Context(), client, "a"); err != nil {
		t.Fatal(err)
	}
	if gap := s.at[1].Sub(s.at[0]); gap < time.Second || delays[0] != time.Second {
		t.Fatalf("RetryInfo 1s: waited %v (announced %v)", gap, delays)
	}
	delays = nil
	s, client = scriptedClient(t, quickPolicy(record), refusal(connect.CodeResourceExhausted, "RATE_LIMITED", time.Hour), nil)
	if _, err := call(t.Context(), client, "a"); err != nil || s.calls() != 2 || len(delays) != 1 || delays[0] != 20*time.Millisecond {
		t.Fatalf("RetryInfo 1h: %v, delays %v, want the 20ms cap", err, delays)
	}
}

func TestIdempotentClientGivesUp(t *testing.T) {
	s, client := scriptedClient(t, quickPolicy(retry.WithMaxAttempts(3)), connect.NewError(connect.CodeUnavailable, errors.New("down")))
	_, err := call(t.Context(), client, "a")
	if !errors.Is(err, connectrpc.ErrBudgetExhausted) || connect.CodeOf(err) != connect.CodeUnavailable || s.calls() != 3 {
		t.Fatalf("%v (code %v) after %d calls", err, connect.CodeOf(err), s.calls())
	}
	re := new(connectrpc.RetryError)
	if !errors.As(err, &re) || re.Key != s.keys[0][0] || re.Attempts != 3 || !strings.Contains(err.Error(), "Idempotency-Key: "+re.Key) {
		t.Fatalf("%v: want a RetryError with the key sent, %q, and 3 attempts", err, s.keys[0])
	}

	ctx, cancel := context.WithCancel(t.Context())
	p := retry.New(retry.WithMaxRetryAfter(time.Minute), retry.WithBudget(time.Hour), retry.WithOnRetry(func(retry.Event) { cancel() }))
	s, client = scriptedClient(t, p, refusal(connect.CodeUnavailable, "", 30*time.Second))
	start := time.Now()
	_, err = call(ctx, client, "a")
	if !errors.Is(err, context.Canceled) || connect.CodeOf(err) != connect.CodeCanceled || s.calls() != 1 || time.Since(start) > 5*time.Second {
		t.Fatalf("cancelled: %v (code %v) after %d calls, %v", err, connect.CodeOf(err), s.calls(), time.Since(start))
	}
	if !errors.As(err, &re) || re.Key != s.keys[0][0] || re.Attempts != 1 {
		t.Fatalf("cancelled: %v, want a RetryError with the key sent, %q", err, s.keys[0])
	}

	// The deadline ends an attempt: whether it ran is unknown, so the
	// error carries the key too.
	// The handler outlives the deadline: the client's context ends the
	// attempt, or the server's deadline does (CodeDeadlineExceeded).
	var seen atomic.Value
	release := make(chan struct{})
	block := func(ctx context.Context, r *connect.Request[testpb.ReserveRequest]) (*connect.Response[testpb.ReserveResponse], error) {
		seen.Store(r.Header().Get(connectrpc.IdempotencyKeyHeader))
		<-release
		return nil, ctx.Err()
	}
	defer close(release)
	client = clientOf(t, block, nil, connectrpc.NewIdempotentClient(quickPolicy()))
	dctx, dcancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer dcancel()
	_, err = call(dctx, client, "a")
	if !errors.As(err, &re) || re.Key != seen.Load() || re.Attempts != 1 || connect.CodeOf(err) != connect.CodeDeadlineExceeded {
		t.Fatalf("deadline: %v (code %v): want a RetryError with the key sent, %v", err, connect.CodeOf(err), seen.Load())
	}
}

// Against the guard on Redis: a retry while the key's first call runs gets
// CodeAborted and waits, then the first call's answer; a key reused with
// another request is ErrKeyReused.
func TestIdempotentClientGuard(t *testing.T) {
	lk := newLocker(t)
	ig, err := connectrpc.NewIdempotency(lk, []string{reserve}, guard.WithPublicScope())
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var entered, runs atomic.Int64
	h := func(ctx context.Context, r *connect.Request[testpb.ReserveRequest]) (*connect.Response[testpb.ReserveResponse], error) {
		n := runs.Add(1)
		if r.Msg.GetSku() == "slow" {
			entered.Add(1)
			<-release
		}
		return connect.NewResponse(&testpb.ReserveResponse{Token: n}), nil
	}
	var inFlight atomic.Int32
	p := retry.New(retry.WithBackoff(time.Millisecond, 5*time.Millisecond), retry.WithMaxRetryAfter(20*time.Millisecond),
		retry.WithMaxAttempts(1000), retry.WithOnRetry(func(e retry.Event) {
			if e.Class == retry.InFlight && e.Hint == time.Second && inFlight.Add(1) == 1 {
				close(release)
			}
		}))
	plain := clientOf(t, h, []connect.HandlerOption{connect.WithInterceptors(ig)})
	client := clientOf(t, h, []connect.HandlerOption{connect.WithInterceptors(ig)}, connectrpc.NewIdempotentClient(p))
	key := retry.FormatKey(retry.NewKey())
	keyed := func(sku string) *connect.Request[testpb.ReserveRequest] {
		req := connect.NewRequest(&testpb.ReserveRequest{Sku: sku})
		req.Header().Set(connectrpc.IdempotencyKeyHeader, key)
		return req
	}

	first := make(chan int64, 1)
	go func() {
		resp, err := plain.CallUnary(context.Background(), keyed("slow"))
		if err != nil {
			t.Error(err)
			first <- 0
			return
		}
		first <- resp.Msg.GetToken()
	}()
	testwait.Eventually(t, "the first call runs", func() bool { return entered.Load() == 1 })
	resp, err := client.CallUnary(t.Context(), keyed("slow"))
	if err != nil {
		t.Fatal(err)
	}
	if tok := <-first; resp.Msg.GetToken() != tok || tok != 1 || inFlight.Load() < 1 || runs.Load() != 1 || resp.Header().Get(connectrpc.ReplayedHeader) != "true" {
		t.Fatalf("token %d (first %d), %d Aborted, %d runs", resp.Msg.GetToken(), tok, inFlight.Load(), runs.Load())
	}

	_, err = client.CallUnary(t.Context(), keyed("other"))
	if !errors.Is(err, connectrpc.ErrKeyReused) || connect.CodeOf(err) != connect.CodeFailedPrecondition || runs.Load() != 1 {
		t.Fatalf("another request, same key: %v (code %v)", err, connect.CodeOf(err))
	}
}
