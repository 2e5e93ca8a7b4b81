package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/locktag/locktag/example-app/shopv1"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/redigo"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		main() // the app itself, as a child process of a test (startApp)
		return
	}
	gin.SetMode(gin.ReleaseMode)
	os.Exit(m.Run())
}

// realRedis starts a redis-server for the test and returns a Locker on it.
func realRedis(t *testing.T) (*redistest.Server, *locker.Locker) {
	t.Helper()
	srv := redistest.Start(t)
	lk, err := locker.New(redigo.New(srv.Pool(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk.Close() })
	return srv, lk
}

// post sends a POST to the router in process and returns the recorder.
func post(r http.Handler, path, body string, headers ...string) *httptest.ResponseRecorder {
	return do(r, http.MethodPost, path, body, headers...)
}

// do sends a request to the router in process and returns the recorder.
func do(r http.Handler, method, path, body string, headers ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, req)
	return rec
}

// serveGRPC serves s's gRPC API on a loopback port until the test ends and
// returns a client.
func serveGRPC(t *testing.T, s *shop) shopv1.ShopClient {
	t.Helper()
	gs, err := newGRPCServer(s)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = gs.Serve(ln); close(done) }()
	conn := dialGRPC(t, ln.Addr().String())
	t.Cleanup(func() {
		_ = conn.Close()
		gs.Stop()
		<-done
	})
	return shopv1.NewShopClient(conn)
}

func dialGRPC(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	testwait.Within(t, within, what, cond)
}

// testCtx is a context that ends with the test (or after a minute).
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// otherReplicaHolds takes sku's item lock from a Locker of its own, as
// another replica of the service would, and returns the lease.
func otherReplicaHolds(t *testing.T, srv *redistest.Server, sku string) *locker.Lease {
	t.Helper()
	held, err := otherReplica(t, srv).Obtain(context.Background(), itemLock(sku), locker.Params{})
	if err != nil {
		t.Fatal(err)
	}
	return held
}

// otherReplica is a Locker of its own on srv, as another replica of the
// service would have; it is closed when the test ends.
func otherReplica(t *testing.T, srv *redistest.Server) *locker.Locker {
	t.Helper()
	replica, err := locker.New(redigo.New(srv.Pool(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = replica.Close() })
	return replica
}
