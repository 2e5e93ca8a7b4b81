package connectrpc_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/locktag/locktag/interceptor/connectrpc"
	"github.com/locktag/locktag/interceptor/connectrpc/internal/rpccore/testpb"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/locker/redigo"
)

var testRedis *redistest.Server

func TestMain(m *testing.M) {
	redistest.Main(m, func(s *redistest.Server) { testRedis = s })
}

const (
	reserve = "/locktag.test.v1.Inventory/Reserve"
	restock = "/locktag.test.v1.Inventory/Restock"
)

// serve mounts handler functions for Reserve and Restock behind opts and
// returns clients for both.
func serve(t *testing.T, h func(ctx context.Context, r *connect.Request[testpb.ReserveRequest]) (*connect.Response[testpb.ReserveResponse], error), opts ...connect.HandlerOption) (res, rst *connect.Client[testpb.ReserveRequest, testpb.ReserveResponse]) {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle(reserve, connect.NewUnaryHandler(reserve, h, opts...))
	mux.Handle(restock, connect.NewUnaryHandler(restock, h, opts...))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return connect.NewClient[testpb.ReserveRequest, testpb.ReserveResponse](srv.Client(), srv.URL+reserve),
		connect.NewClient[testpb.ReserveRequest, testpb.ReserveResponse](srv.Client(), srv.URL+restock)
}

func newLocker(t *testing.T) *locker.Locker {
	t.Helper()
	lk, err := locker.New(redigo.New(testRedis.Pool(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk.Close() })
	return lk
}

func TestLockCodes(t *testing.T) {
	lk := newLocker(t)
	ic, err := connectrpc.New(lk, connectrpc.Rules{reserve: `key:"sku:{req.sku}:{header.X-User}"`})
	if err != nil {
		t.Fatal(err)
	}
	var seen string
	res, rst := serve(t, func(ctx context.Context, r *connect.Request[testpb.ReserveRequest]) (*connect.Response[testpb.ReserveResponse], error) {
		seen = locker.FromContext(ctx).Key()
		return connect.NewResponse(&testpb.ReserveResponse{Token: locker.FromContext(ctx).Token()}), nil
	}, connect.WithInterceptors(ic))
	req := connect.NewRequest(&testpb.ReserveRequest{Sku: "a"})
	req.Header().Set("X-User", "ann")
	if _, err := res.CallUnary(t.Context(), req); err != nil || seen != "sku:a:ann" {
		t.Fatalf("%v, key %q", err, seen)
	}
	if _, err := rst.CallUnary(t.Context(), connect.NewRequest(&testpb.ReserveRequest{Item: &testpb.Item{Sku: "b"}})); err != nil || seen != "restock:b" {
		t.Fatalf("proto option rule: %v, key %q", err, seen)
	}
	held, err := lk.Obtain(t.Context(), "sku:a:ann", locker.Params{})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(context.Background())
	_, err = res.CallUnary(t.Context(), req)
	if connect.CodeOf(err) != connect.CodeAborted || connectrpc.RetryDelay(err) != time.Second {
		t.Fatalf("busy: %v", err)
	}
	_, err = res.CallUnary(t.Context(), connect.NewRequest(&testpb.ReserveRequest{Sku: "a"}))
	if connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Fatalf("missing header: %v", err)
	}
	if _, err := connectrpc.New(lk, connectrpc.Rules{reserve: `key:"sku:{req.nope}"`}); !errors.Is(err, connectrpc.ErrBadField) {
		t.Fatalf("unknown field: %v", err)
	}
}

func TestIdempotency(t *testing.T) {
	lk := newLocker(t)
	ig, err := connectrpc.NewIdempotency(lk, []string{reserve}, guard.WithPublicScope())
	if err != nil {
		t.Fatal(err)
	}
	runs := int64(0)
	res, _ := serve(t, func(ctx context.Context, r *connect.Request[testpb.ReserveRequest]) (*connect.Response[testpb.ReserveResponse], error) {
		runs++
		if r.Msg.Sku == "bad" {
			return nil, connect.NewError(connect.CodeNotFound, errors.New("no such sku"))
		}
		return connect.NewResponse(&testpb.ReserveResponse{Token: runs}), nil
	}, connect.WithInterceptors(ig))
	run := strconv.FormatInt(time.Now().UnixNano(), 36) // fresh keys for every -count run
	call := func(sku, key string) (*connect.Response[testpb.ReserveResponse], error) {
		req := connect.NewRequest(&testpb.ReserveRequest{Sku: sku})
		req.Header().Set(connectrpc.IdempotencyKeyHeader, key+run)
		return res.CallUnary(t.Context(), req)
	}
	first, err1 := call("a", "k1")
	again, err2 := call("a", "k1")
	if err1 != nil || err2 != nil || again.Msg.Token != first.Msg.Token || runs != 1 || again.Header().Get(connectrpc.ReplayedHeader) != "true" {
		t.Fatalf("replay: %v %v runs %d", err1, err2, runs)
	}
	if _, err := call("b", "k1"); connect.CodeOf(err) != connect.CodeFailedPrecondition {
		t.Fatalf("mismatch: %v", err)
	}
	_, err1 = call("bad", "k2")
	_, err2 = call("bad", "k2")
	if connect.CodeOf(err1) != connect.CodeNotFound || connect.CodeOf(err2) != connect.CodeNotFound || runs != 2 {
		t.Fatalf("stored error: %v %v runs %d", err1, err2, runs)
	}
	if _, err := res.CallUnary(t.Context(), connect.NewRequest(&testpb.ReserveRequest{Sku: "a"})); connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Fatalf("missing key: %v", err)
	}
}
