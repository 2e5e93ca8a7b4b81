package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// seedStock is what the shop sells when it starts.
var seedStock = map[string]int64{"apple": 100, "pear": 50, "plum": 10}

// serve runs the HTTP and gRPC servers until ctx ends, then stops both
// gracefully (in-flight requests finish and release their locks).
func serve(ctx context.Context, cfg config, be *backend, out io.Writer) error {
	s := newShop(be.lk, newStore(cfg.Latency, seedStock))
	if be.records != nil {
		s.records = be.records
	}
	var accessLog io.Writer
	if !cfg.Quiet {
		accessLog = out
	}
	handler, err := newHTTPHandler(s, accessLog) // checks every lock tag before traffic
	if err != nil {
		return err
	}
	// HTTP/1.1 and unencrypted HTTP/2 (h2c) on one port: connect clients
	// may use either; gRPC-protocol clients of the connect handler need h2c.
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	hs := &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second, Protocols: protocols}
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
	case serveErr = <-errc: // a server failed: stop the other one too
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	shutErr := hs.Shutdown(sctx)
	stopped := make(chan struct{})
	go func() { gs.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-sctx.Done():
		gs.Stop()
		<-stopped
	}
	if serveErr == nil { // drain the two Serve results
		serveErr = <-errc
	}
	if errors.Is(serveErr, http.ErrServerClosed) {
		serveErr = nil
	}
	stopReport()
	<-reported
	fmt.Fprintln(out, "stopped")
	return errors.Join(serveErr, shutErr)
}

// printBanner tells a newcomer where the servers listen and what to try.
func printBanner(out io.Writer, redisDesc, httpAddr, grpcAddr string) {
	h := "http://" + httpAddr
	fmt.Fprintf(out, `locktag example shop
  redis:    %s
  http:     %s (Gin; one net/http route: POST /std/items/{id}/buy)
  connect:  %[2]s/shop.v1.Shop/ (connect-go on the HTTP port: Connect, gRPC over h2c, gRPC-Web)
  grpc:     %[3]s (server reflection on)

Try:
  curl -s %[2]s/items
  curl -s %[2]s/healthz                                                # 200 while Redis answers, else 503
  open   %[2]s/debug/locktag/                                          # who holds which lock (force-release from this machine)
  curl -s -X POST -H 'X-User: alice' %[2]s/items/apple/buy
  curl -s %[2]s/items/apple                                            # read lock: reads run together
  curl -s -X PUT -d '{"add":5}' %[2]s/items/apple/stock                # write lock: waits for readers
  curl -s -i -H 'X-User: alice' %[2]s/reports/sales                   # limit 2 per user; 429 when full
  curl -s -X POST -H 'X-User: alice' %[2]s/std/items/apple/buy          # net/http, the same lock
  curl -s -X POST -H 'Content-Type: application/json' \
       -d '{"sku":"apple","user":"carol"}' %[2]s/shop.v1.Shop/Buy       # connect
  curl -s -X POST -H 'X-User: alice' -H 'Idempotency-Key: "pay-1"' \
       -d '{"order_id":"ord_1","amount_cents":1999}' %[2]s/payments   # twice: the 2nd is replayed
  grpcurl -plaintext -d '{"sku":"apple","user":"bob"}' %[3]s shop.v1.Shop/Buy
  grpcurl -plaintext %[3]s grpc.health.v1.Health/Check                # SERVING while Redis answers
  go run ./example-app -demo     # oversold with and without the lock tag

`, redisDesc, h, grpcAddr)
}
