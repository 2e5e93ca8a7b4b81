package connectrpc_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/locktag/locktag/interceptor/connectrpc"
	"github.com/locktag/locktag/interceptor/connectrpc/internal/rpccore/testpb"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/locker/guard/retry"
)

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

func (e *execLog) reserve(_ context.Context, r *connect.Request[testpb.ReserveRequest]) (*connect.Response[testpb.ReserveResponse], error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.n++
	e.byKey[r.Header().Get(connectrpc.IdempotencyKeyHeader)]++
	e.byOp[r.Msg.GetSku()]++
	if _, ok := e.first[r.Msg.GetSku()]; !ok {
		e.first[r.Msg.GetSku()] = e.n
	}
	return connect.NewResponse(&testpb.ReserveResponse{Token: e.n}), nil
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

// dropFirstAnswer serves each request through next and, for the first
// answer (200) of each operation (the X-Op header), drops it after next
// has produced it: the connection is closed and the client gets nothing.
func dropFirstAnswer(t *testing.T, next http.Handler) http.Handler {
	var mu sync.Mutex
	seen := map[string]bool{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		op := r.Header.Get("X-Op")
		mu.Lock()
		drop := rec.Code == http.StatusOK && !seen[op]
		if drop {
			seen[op] = true
		}
		mu.Unlock()
		if drop {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Errorf("hijack: %v", err)
				return
			}
			_ = conn.Close()
			return
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	})
}

// freshKeyPerAttempt is the broken client the control uses: after the
// retrying interceptor, it replaces the key on every attempt.
var freshKeyPerAttempt = connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		req.Header().Set(connectrpc.IdempotencyKeyHeader, retry.FormatKey(retry.NewKey()))
		return next(ctx, req)
	}
})

// Through a server that drops every operation's first answer after the
// guarded handler ran, the retrying client runs each operation exactly
// once and gets the first execution's answer, replayed; the control,
// whose key changes per attempt, runs each twice.
func TestIdempotentClientExactlyOnce(t *testing.T) {
	lk := newLocker(t)
	policy := retry.New(retry.WithBackoff(time.Millisecond, 10*time.Millisecond))
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	ops := make([]string, 16)
	for i := range ops {
		ops[i] = run + "-" + strconv.Itoa(i)
	}
	serve := func(t *testing.T, interceptors ...connect.Interceptor) (*execLog, *connect.Client[testpb.ReserveRequest, testpb.ReserveResponse]) {
		ex := &execLog{byKey: map[string]int{}, byOp: map[string]int{}, first: map[string]int64{}}
		ig, err := connectrpc.NewIdempotency(lk, []string{reserve}, guard.WithPublicScope())
		if err != nil {
			t.Fatal(err)
		}
		mux := http.NewServeMux()
		mux.Handle(reserve, connect.NewUnaryHandler(reserve, ex.reserve, connect.WithInterceptors(ig)))
		srv := httptest.NewServer(dropFirstAnswer(t, mux))
		t.Cleanup(srv.Close)
		// No keep-alives: net/http's Transport would resend a keyed request
		// itself after a reused connection fails, below the control's keys.
		hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		return ex, connect.NewClient[testpb.ReserveRequest, testpb.ReserveResponse](hc, srv.URL+reserve, connect.WithInterceptors(interceptors...))
	}
	call := func(t *testing.T, c *connect.Client[testpb.ReserveRequest, testpb.ReserveResponse]) map[string]*connect.Response[testpb.ReserveResponse] {
		var mu sync.Mutex
		out := map[string]*connect.Response[testpb.ReserveResponse]{}
		var wg sync.WaitGroup
		sem := make(chan struct{}, 4)
		for _, op := range ops {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				req := connect.NewRequest(&testpb.ReserveRequest{Sku: op})
				req.Header().Set("X-Op", op)
				resp, err := c.CallUnary(t.Context(), req)
				if err != nil {
					t.Errorf("%s: %v", op, err)
					return
				}
				mu.Lock()
				out[op] = resp
				mu.Unlock()
			})
		}
		wg.Wait()
		return out
	}

	t.Run("same key on every attempt", func(t *testing.T) {
		ex, c := serve(t, connectrpc.NewIdempotentClient(policy))
		results := call(t, c)
		if err := ex.exactlyOnce(ops); err != nil {
			t.Fatal(err)
		}
		for _, op := range ops {
			resp := results[op]
			ex.mu.Lock()
			first := ex.first[op]
			ex.mu.Unlock()
			if resp == nil || resp.Msg.GetToken() != first || resp.Header().Get(connectrpc.ReplayedHeader) != "true" {
				t.Errorf("%s: %v, want execution %d replayed", op, resp, first)
			}
		}
	})

	t.Run("control: a new key per attempt", func(t *testing.T) {
		ex, c := serve(t, connectrpc.NewIdempotentClient(policy), freshKeyPerAttempt)
		call(t, c)
		if err := ex.exactlyOnce(ops); err == nil {
			t.Fatal("the control ran every operation once: the test cannot catch a client that changes its key")
		}
		ex.mu.Lock()
		defer ex.mu.Unlock()
		for _, op := range ops {
			if ex.byOp[op] != 2 {
				t.Errorf("control: %s executed %d times, want 2", op, ex.byOp[op])
			}
		}
	})
}
