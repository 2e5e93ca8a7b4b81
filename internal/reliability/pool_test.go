package reliability

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/locktag/locktag/interceptor"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/reliability/faults"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/redigo"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/dynamicpb"
)

// newPooledLocker is newLocker with pooled calls (redigo.WithPipelining(0)):
// the mode where the pool's MaxActive bounds the Locker's calls, so where an
// exhausted pool can starve them. The default pipelined driver only dials
// with the pool.
func newPooledLocker(t testing.TB, pool *redis.Pool, opts ...locker.Option) *locker.Locker {
	t.Helper()
	lk, err := locker.New(redigo.New(pool, redigo.WithPipelining(0)), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk.Close() })
	return lk
}

// holdConns takes n connections from pool and keeps them busy until the
// test ends, as request traffic would.
func holdConns(t *testing.T, pool *redis.Pool, n int) {
	t.Helper()
	for range n {
		c := pool.Get()
		if _, err := c.Do("PING"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
	}
}

// TestPoolExhaustedAdapters: with every pooled connection taken, the Gin
// adapter answers 503 (lock-unavailable) and the gRPC one Unavailable —
// never 409 / Aborted, which would tell the client the lock is busy and
// invite a retry loop against a resource nobody holds. The handler does
// not run. A really busy lock, for contrast, is 409 / Aborted. (Pooled
// calls: the default pipelined driver takes no pooled connection.)
func TestPoolExhaustedAdapters(t *testing.T) {
	srv := redistest.Start(t)
	pool := faults.NewPool(t, srv.Addr(), faults.PoolOptions{MaxActive: 1})
	lk := newPooledLocker(t, pool)
	other := newLocker(t, srv.Pool(t))
	r, runs := lockRouter(t, lk, `key:"order:{path.id}" expire:"10s"`)
	ic, err := interceptor.New(lk, grpcRules, interceptor.WithRegistry(abuseFiles, nil))
	if err != nil {
		t.Fatal(err)
	}
	var grpcRuns int
	conn := serveGRPC(t, func(ctx context.Context, method string, req *dynamicpb.Message) (any, error) {
		grpcRuns++
		return newResp(0, ""), nil
	}, grpc.ChainUnaryInterceptor(ic.Unary()))

	problemType := func(w *httptest.ResponseRecorder) string {
		var p struct{ Type string }
		_ = json.Unmarshal(w.Body.Bytes(), &p)
		return p.Type
	}

	// Busy first: the lock is held elsewhere.
	le, err := other.Obtain(context.Background(), "order:1", locker.Params{})
	if err != nil {
		t.Fatal(err)
	}
	if w := serveHTTP(r, httptest.NewRequest(http.MethodPost, "/orders/1/pay", nil)); w.Code != http.StatusConflict {
		t.Fatalf("busy: %d, want 409", w.Code)
	}
	le2, err := other.Obtain(context.Background(), "sku:1", locker.Params{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := invoke(context.Background(), conn, methodStr, newReq("1", nil, nil)); status.Code(err) != codes.Aborted {
		t.Fatalf("busy: %v, want Aborted", err)
	}
	_ = le.Release(context.Background())
	_ = le2.Release(context.Background())

	holdConns(t, pool, 1)
	w := serveHTTP(r, httptest.NewRequest(http.MethodPost, "/orders/2/pay", nil))
	if w.Code != http.StatusServiceUnavailable {
		t.Fatalf("pool exhausted: %d, want 503; body %s", w.Code, w.Body)
	}
	t.Logf("503 body: %s", w.Body)
	if pt := problemType(w); pt == "" || !strings.HasSuffix(pt, "#lock-unavailable") {
		t.Errorf("problem type %q, want lock-unavailable", pt)
	}
	_, err = invoke(context.Background(), conn, methodStr, newReq("2", nil, nil))
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("pool exhausted: %v, want Unavailable", err)
	}
	if runs.Load() != 0 || grpcRuns != 0 {
		t.Fatalf("handlers ran: gin %d, grpc %d", runs.Load(), grpcRuns)
	}
}

// TestRenewalUnderPoolStarvation: request traffic holds every pooled
// connection for two leases while a watchdog lock is held, with a pool that
// fails fast (Wait=false) and one that queues (Wait=true). The lock must
// survive: a starved pool is not a lost Redis. (Renewals and releases are
// priority calls that fall back to a reserved connection when the pool is
// exhausted, since 8513ba4; before it this test lost the lock.) It runs
// with pooled calls and with the default pipelined driver, which takes no
// pooled connection at all.
func TestRenewalUnderPoolStarvation(t *testing.T) {
	for _, tc := range []struct {
		name      string
		wait      bool
		newLocker func(testing.TB, *redis.Pool, ...locker.Option) *locker.Locker
	}{
		{"pooled/pool.Wait=false", false, newPooledLocker},
		{"pooled/pool.Wait=true", true, newPooledLocker},
		{"pipelined/pool.Wait=false", false, newLocker},
		{"pipelined/pool.Wait=true", true, newLocker},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			pool := faults.NewPool(t, srv.Addr(), faults.PoolOptions{MaxActive: 2, Wait: tc.wait})
			const lease = 600 * time.Millisecond
			lk := tc.newLocker(t, pool, locker.WithWatchdog(lease, lease/5))
			le, err := lk.Obtain(context.Background(), "starved", locker.Params{})
			if err != nil {
				t.Fatal(err)
			}
			holdConns(t, pool, 2)
			time.Sleep(2 * lease) // the fault's duration: traffic holds the pool for two leases
			if le.Lost() {
				t.Fatalf("lease lost while Redis still held it (owner %q): %v", owner(t, srv, "starved"), context.Cause(le.Context()))
			}
			if err := le.Release(context.Background()); err != nil {
				t.Fatalf("release with a starved pool: %v", err)
			}
			if n := exists(t, srv, lockKeys("starved")...); n != 0 {
				t.Fatal("lock left behind")
			}
		})
	}
}
