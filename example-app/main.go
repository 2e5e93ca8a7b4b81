// Command example-app is locktag's example service: a flash-sale shop with
// an HTTP API (Gin) and a gRPC API in one process.
//
//	go run ./example-app          # serve on an embedded Redis, nothing to install
//	go run ./example-app -demo    # oversold with and without the lock tag
//	go run ./example-app -otel    # also print locktag's spans and metrics
//	go run ./example-app -router echo  # the HTTP API on Echo instead of Gin
//
// Ctrl-C (or SIGTERM) stops it gracefully: requests in flight finish and
// release their locks (after -grace, 10s, they are cancelled: they answer
// 503 and unlock), and it exits 0. A second Ctrl-C quits at once.
//
// It uses every part of locktag a service reaches for: a lock tag on a Gin
// route (POST /items/:id/buy, key item:{path.id}), a lock declared as a proto
// option on a gRPC method (shop.v1.Shop/Buy, key item:{req.sku}), an
// idempotency guard (POST /payments with Idempotency-Key, scoped by X-User),
// a manual nested lock that re-enters the route's lock (shop.Buy), fencing
// tokens checked by the storage layer on the read and the write of each sale
// (store.Claim and store.Put with a locker.Fence), a periodic stock report
// that one replica writes per tick (package locker/job), and OpenTelemetry.
//
// Without configuration it runs on an embedded miniredis — for development
// only. REDIS_ADDR (with REDIS_PASSWORD, REDIS_TLS=1) selects a real Redis;
// REDIS_REDLOCK, REDIS_CLUSTER and REDIS_SENTINEL the other deployments (see
// openBackend).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/locktag/locktag/locker"
)

// config is what the flags and the environment set.
type config struct {
	HTTPAddr string
	GRPCAddr string
	Router   string // the HTTP API's router: gin (the default) or echo
	Demo     bool
	OTel     bool
	Buyers   int           // -demo: concurrent purchases per round
	Stock    int           // -demo: units in stock
	Latency  time.Duration // the store's write latency, the window of the race
	Quiet    bool          // no access log
	Grace    time.Duration // how long a shutdown waits for requests in flight; 0: defaultGrace
	// ReportEvery is the period of the stock report job, written by one
	// replica per tick; 0: none.
	ReportEvery time.Duration
	Getenv      func(string) string
	// Ready, if set, is called once both servers listen (tests use it).
	Ready func(httpAddr, grpcAddr string)

	// FiberAddr (-fiber) also serves the HTTP routes on Fiber; "": off.
	FiberAddr string
}

func main() {
	cfg := config{Getenv: os.Getenv}
	flag.StringVar(&cfg.HTTPAddr, "http", "127.0.0.1:8080", "HTTP listen address")
	flag.StringVar(&cfg.GRPCAddr, "grpc", "127.0.0.1:9090", "gRPC listen address")
	flag.StringVar(&cfg.Router, "router", routerGin, "the HTTP API's router: gin or echo (the same routes and lock tags)")
	flag.StringVar(&cfg.FiberAddr, "fiber", "", "also serve the shop's HTTP routes on Fiber at this address (empty: off)")
	flag.BoolVar(&cfg.Demo, "demo", false, "run the flash-sale demo (with and without the lock tag) and exit")
	flag.BoolVar(&cfg.OTel, "otel", false, "print locktag's OpenTelemetry spans and metrics (stdout exporters)")
	flag.IntVar(&cfg.Buyers, "buyers", 300, "-demo: concurrent purchases per round")
	flag.IntVar(&cfg.Stock, "stock", 100, "-demo: units in stock")
	flag.DurationVar(&cfg.Latency, "latency", 5*time.Millisecond, "store write latency (the window in which unlocked purchases race)")
	flag.BoolVar(&cfg.Quiet, "quiet", false, "no access log")
	flag.DurationVar(&cfg.Grace, "grace", defaultGrace, "on Ctrl-C or SIGTERM, how long requests in flight may run on before they are cancelled")
	flag.DurationVar(&cfg.ReportEvery, "report-every", time.Minute, "period of the stock report, written by one replica per tick (0: none)")
	flag.Parse()

	gin.SetMode(gin.ReleaseMode)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The first signal starts a graceful stop (serve); a second one
	// ends the process at once, as without the handler.
	go func() { <-ctx.Done(); stop() }()
	if err := run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "example-app:", err)
		stop()
		os.Exit(1)
	}
}

// defaultGrace is how long a shutdown lets requests in flight finish.
const defaultGrace = 10 * time.Second

// grace is cfg.Grace, or defaultGrace when unset.
func (cfg config) grace() time.Duration {
	if cfg.Grace > 0 {
		return cfg.Grace
	}
	return defaultGrace
}

// run opens the backend and serves until ctx ends, or runs the demo.
func run(ctx context.Context, cfg config, out io.Writer) (err error) {
	var shutdownOTel func(context.Context) error
	var opts []locker.Option
	if cfg.OTel {
		opts, shutdownOTel, err = setupTelemetry(out, 10*time.Second)
		if err != nil {
			return err
		}
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = shutdownOTel(sctx)
		}()
	}
	// The label says who holds a lock on the ops page and in Inspect:
	// this process, next to the route and trace id the guards add.
	opts = append(opts, locker.WithLabel(holderLabel()))
	be, err := openBackend(ctx, cfg.Getenv, opts...)
	if err != nil {
		return err
	}
	defer be.Close()
	if be.dev {
		fmt.Fprintln(out, "WARNING: using an embedded miniredis — development only. Set REDIS_ADDR to use a real Redis.")
	}
	if cfg.Demo {
		_, err := runDemo(ctx, be.lk, out, demoConfig{Buyers: cfg.Buyers, Stock: cfg.Stock, Latency: cfg.Latency})
		return err
	}
	return serve(ctx, cfg, be, out)
}

// holderLabel names this process for lock holders' labels: "shop@host pid N".
func holderLabel() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	return fmt.Sprintf("shop@%s pid %d", host, os.Getpid())
}
