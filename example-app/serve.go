package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"google.golang.org/grpc"
)

// seedStock is what the shop sells when it starts.
var seedStock = map[string]int64{"apple": 100, "pear": 50, "plum": 10}

// errShuttingDown is the cause with which the requests still running when
// the drain's grace period ends are cancelled: their handlers see it in
// their context, answer (503) and release their locks.
var errShuttingDown = fmt.Errorf("example-app: shutting down: %w", context.Canceled)

// serve runs the HTTP and gRPC servers until ctx ends, then drains them
// (drain): a Ctrl-C lets the requests in flight finish and release their
// locks, and is a clean exit.
func serve(ctx context.Context, cfg config, be *backend, out io.Writer) error {
	s := newShop(be.lk, newStore(cfg.Latency, seedStock))
	if be.records != nil {
		s.records = be.records
	}
	var accessLog io.Writer
	if !cfg.Quiet {
		accessLog = out
	}
	handler, err := newHTTPHandlerOn(s, accessLog, cfg.Router) // checks every lock tag before traffic
	if err != nil {
		return err
	}
	// HTTP/1.1 and unencrypted HTTP/2 (h2c) on one port: connect clients
	// may use either; gRPC-protocol clients of the connect handler need h2c.
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	// Requests run on a context that drain cancels when its grace period
	// is over, so that a slow handler ends (and unlocks) instead of
	// outliving the shutdown.
	base, cancelRequests := context.WithCancelCause(context.Background())
	defer cancelRequests(nil)
	hs := &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second, Protocols: protocols,
		BaseContext: func(net.Listener) context.Context { return base }}
	gs, err := newGRPCServer(s)
	if err != nil {
		return err
	}
	hl, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("http: %w (choose another address with -http)", err)
	}
	gl, err := net.Listen("tcp", cfg.GRPCAddr)
	if err != nil {
		_ = hl.Close()
		return fmt.Errorf("grpc: %w (choose another address with -grpc)", err)
	}
	printBanner(out, be.desc, hl.Addr().String(), gl.Addr().String())
	if cfg.Router == routerEcho {
		fmt.Fprintln(out, "  router:   Echo (-router echo): the HTTP API's routes and lock tags on Echo instead of Gin")
	}
	stopFiber, err := startFiber(cfg.FiberAddr, s, accessLog, out) // -fiber: the HTTP routes on Fiber too
	if err != nil {
		_, _ = hl.Close(), gl.Close()
		return err
	}

	errc := make(chan error, 2)
	go func() { errc <- hs.Serve(hl) }()
	go func() { errc <- gs.Serve(gl) }()
	rctx, stopReport := context.WithCancel(ctx)
	reported := make(chan struct{})
	go func() {
		defer close(reported)
		if cfg.ReportEvery > 0 {
			// Every replica schedules the report; one writes it per tick.
			_ = s.reportStock(rctx, out, cfg.ReportEvery)
		}
	}()
	if cfg.Ready != nil {
		cfg.Ready(hl.Addr().String(), gl.Addr().String())
	}

	var serveErr error
	select {
	case <-ctx.Done():
		fmt.Fprintf(out, "stopping: letting requests in flight finish (up to %v; Ctrl-C again to quit at once)\n", cfg.grace())
	case serveErr = <-errc: // a server failed: stop the other one too
	}
	shutErr := drain(hs, gs, cfg.grace(), func() { cancelRequests(errShuttingDown) })
	shutErr = errors.Join(shutErr, stopFiber(cfg.grace()))
	if serveErr == nil { // drain the two Serve results
		serveErr = <-errc
	}
	if errors.Is(serveErr, http.ErrServerClosed) || errors.Is(serveErr, grpc.ErrServerStopped) {
		serveErr = nil
	}
	stopReport()
	<-reported
	fmt.Fprintln(out, "stopped")
	return errors.Join(serveErr, shutErr)
}

// drain stops both servers gracefully: no new connections, and the
// requests in flight run on. If some still run after grace, cancel is
// called — their contexts end with errShuttingDown, so handlers that
// watch them answer and release their locks — and gRPC calls are cancelled;
// after a further afterCancel, whatever is left is closed and reported.
func drain(hs *http.Server, gs *grpc.Server, grace time.Duration, cancel func()) error {
	const afterCancel = 5 * time.Second
	graceOver := time.NewTimer(grace)
	defer graceOver.Stop()
	stopped := make(chan struct{})
	go func() { gs.GracefulStop(); close(stopped) }()
	go func() {
		select {
		case <-stopped:
		case <-graceOver.C:
			gs.Stop() // cancels the calls still running; GracefulStop returns
		}
	}()
	sctx, stop := context.WithTimeout(context.Background(), grace)
	defer stop()
	err := hs.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		cancel()
		ctx, stop := context.WithTimeout(context.Background(), afterCancel)
		defer stop()
		if err = hs.Shutdown(ctx); err != nil {
			_ = hs.Close()
			err = fmt.Errorf("http: requests still running %v after they were cancelled: %w", afterCancel, err)
		}
	}
	<-stopped
	return err
}

// printBanner tells a newcomer where the servers listen and what to try:
// every route the app serves, with commands that work on any system with
// curl (and grpcurl for gRPC). TestBannerListsEveryRoute keeps it complete.
func printBanner(out io.Writer, redisDesc, httpAddr, grpcAddr string) {
	h := "http://" + httpAddr
	fmt.Fprintf(out, `locktag example shop
  redis:    %s
  http:     %s (Gin; one net/http route: POST /std/items/{id}/buy)
  connect:  %[2]s/shop.v1.Shop/ (connect-go on the HTTP port: Connect, gRPC over h2c, gRPC-Web)
  grpc:     %[3]s (server reflection on)
  ops page: %[2]s/debug/locktag/ (open it in a browser: who holds which lock; force-release from this machine)

Try:
  curl -s %[2]s/items
  curl -s %[2]s/healthz                                                # 200 while Redis answers, else 503
  curl -s %[2]s/debug/locktag/api/locks                                # the ops page's JSON
  curl -s -X POST -H 'X-User: alice' %[2]s/items/apple/buy
  curl -s -X POST -H 'X-User: alice' %[2]s/items/apple/buy-unlocked   # the same without the lock: the demo's control
  curl -s %[2]s/items/apple                                            # read lock: reads run together
  curl -s -X PUT -d '{"add":5}' %[2]s/items/apple/stock                # write lock: waits for readers
  curl -s -i -H 'X-User: alice' %[2]s/reports/sales                   # 10 a minute and 2 at once per user; 429 past either
  curl -s -X POST -H 'Content-Type: application/json' \
       -d '{"from":"alice","to":"bob","amount_cents":500}' %[2]s/transfers   # both accounts locked, never deadlocks
  curl -s %[2]s/accounts/bob
  curl -s -X POST -H 'X-User: alice' %[2]s/std/items/apple/buy          # net/http, the same lock
  curl -s -X POST -H 'Content-Type: application/json' \
       -d '{"sku":"apple","user":"carol"}' %[2]s/shop.v1.Shop/Buy       # connect
  curl -s -X POST -H 'Content-Type: application/json' -d '{"sku":"apple"}' %[2]s/shop.v1.Shop/GetItem
  curl -s -X POST -H 'X-User: alice' -H 'Idempotency-Key: "pay-1"' \
       -d '{"order_id":"ord_1","amount_cents":1999}' %[2]s/payments   # twice: the 2nd is replayed
  grpcurl -plaintext -d '{"sku":"apple","user":"bob"}' %[3]s shop.v1.Shop/Buy
  grpcurl -plaintext -d '{"sku":"apple"}' %[3]s shop.v1.Shop/GetItem
  grpcurl -plaintext %[3]s grpc.health.v1.Health/Check                # SERVING while Redis answers
  go run ./example-app -demo     # oversold with and without the lock tag

Ctrl-C stops it: requests in flight finish and release their locks.

`, redisDesc, h, grpcAddr)
}
