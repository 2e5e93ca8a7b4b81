package connectrpc_test

import (
	"context"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/locktag/locktag/interceptor/connectrpc"
	"github.com/locktag/locktag/interceptor/connectrpc/internal/rpccore/testpb"
	"github.com/locktag/locktag/internal/logtest"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/locker/redigo"
)

// TestUnavailableLoggedOnce: the first Unavailable of a Redis outage
// writes one log record naming the procedure; a second one in the same
// outage writes none.
func TestUnavailableLoggedOnce(t *testing.T) {
	srv := redistest.Start(t)
	lk, err := locker.New(redigo.New(srv.Pool(t)), locker.WithCallTimeout(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk.Close() })
	logger, rec := logtest.New()
	ic, err := connectrpc.New(lk, connectrpc.Rules{reserve: `key:"sku:{req.sku}"`}, guard.WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	res, _ := serve(t, func(ctx context.Context, r *connect.Request[testpb.ReserveRequest]) (*connect.Response[testpb.ReserveResponse], error) {
		return connect.NewResponse(&testpb.ReserveResponse{}), nil
	}, connect.WithInterceptors(ic))
	call := func() error {
		_, err := res.CallUnary(t.Context(), connect.NewRequest(&testpb.ReserveRequest{Sku: "a"}))
		return err
	}
	if err := call(); err != nil || len(rec.Records()) != 0 {
		t.Fatalf("healthy: %v, records:\n%s", err, rec)
	}
	srv.Stop()
	if err := call(); connect.CodeOf(err) != connect.CodeUnavailable {
		t.Fatalf("first refusal: %v", err)
	}
	recs := rec.Records()
	if len(recs) != 1 || recs[0].Level.String() != "ERROR" || recs[0].Attrs["name"] != reserve || recs[0].Attrs["outcome"] != "unavailable" {
		t.Fatalf("want one record naming the procedure after the first Unavailable, got:\n%s", rec)
	}
	if err := call(); connect.CodeOf(err) != connect.CodeUnavailable {
		t.Fatalf("second refusal: %v", err)
	}
	if n := len(rec.Records()); n != 1 {
		t.Fatalf("the second Unavailable of the outage logged again (%d records):\n%s", n, rec)
	}
}
