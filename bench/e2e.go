package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	"github.com/gin-gonic/gin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/locktag/locktag/example-app/shopv1"
	"github.com/locktag/locktag/example-app/shopv1/shopv1connect"
	"github.com/locktag/locktag/interceptor"
	"github.com/locktag/locktag/interceptor/connectrpc"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/redigo"
	"github.com/locktag/locktag/middleware"
	"github.com/locktag/locktag/middleware/stdhttp"
)

// e2eTag is the lock tag on the measured route; every worker asks for its
// own order id, so this measures what the tag costs, not contention.
const e2eTag = `key:"order:{path.id}" expire:"10s"`

// e2eServer is one transport's server under test, with a client: do sends
// worker w's request and reports whether it succeeded.
type e2eServer struct {
	do    func(w int) bool
	close func()
}

// e2eTransport builds the server for a mode ("no tag", "lock tag",
// "by hand") on lk, for c workers.
type e2eTransport struct {
	scenario, title, desc string
	open                  func(lk *locker.Locker, c int, mode string) (e2eServer, error)
}

func e2eTransports() []e2eTransport {
	return []e2eTransport{
		{
			scenario: "e2e",
			title:    "Gin route over loopback HTTP, with and without `middleware.Lock`",
			desc:     fmt.Sprintf("`GET /orders/:id/pay` answering 200 \"ok\", tag `%s`, each worker on its own id", e2eTag),
			open:     ginE2E,
		},
		{
			scenario: "e2e-grpc",
			title:    "gRPC unary method over loopback TCP, with and without the lock interceptor",
			desc:     "`shop.v1.Shop/Buy` (example-app's proto) answering at once; with the interceptor its proto option `(locktag.v1.lock) = {key: \"item:{req.sku}\" wait: \"5s\"}` applies (a watchdog lease), each worker on its own sku, all over one client connection",
			open:     grpcE2E,
		},
		{
			scenario: "e2e-http",
			title:    "net/http ServeMux route over loopback HTTP, with and without `stdhttp.Lock`",
			desc:     fmt.Sprintf("`GET /orders/{id}/pay` on an `http.ServeMux` answering 200 \"ok\", tag `%s`, each worker on its own id", e2eTag),
			open:     stdhttpE2E,
		},
		{
			scenario: "e2e-connect",
			title:    "connect-go unary procedure over loopback HTTP/1.1 (Connect protocol, binary proto), with and without `connectrpc.New`",
			desc:     "`shop.v1.Shop/Buy` (example-app's proto and generated connect code) answering at once; with the interceptor its proto option applies as in the gRPC rows, each worker on its own sku",
			open:     connectE2E,
		},
	}
}

// runE2E drives each transport with and without a lock tag.
func runE2E(cfg *config, rep *report) {
	gin.SetMode(gin.ReleaseMode)
	for _, tr := range e2eTransports() {
		md := &rep.md
		fmt.Fprintf(md, "### End to end: %s\n\n", tr.title)
		fmt.Fprintf(md, "%s; the load generator, the server and Redis share this machine. \"by hand\" is the untagged handler calling Obtain and Release itself (same key, same lease): tag − by hand is what the adapter (key evaluation, context, status mapping) costs on top of the lock. Extra = p50(route) − p50(no tag) − 2·RTT (idle PING), i.e. what is added beyond the lock's own two round trips; allocs are per request in the whole process (client + server + locker).\n\n", tr.desc)
		fmt.Fprintf(md, "| route | c | req/s | p50 | p99 | allocs/req | extra beyond 2 RTT | extra / p50(no tag) |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, c := range cfg.cs {
			var base row
			for _, mode := range []string{"no tag", "lock tag", "by hand"} {
				logf("%s %s c=%d", tr.scenario, mode, c)
				r := e2eRun(cfg, c, mode, tr.open)
				r.scenario, r.lib = tr.scenario, mode
				extra, rel := "–", "–"
				if mode != "no tag" {
					x := r.st.pairP50 - base.st.pairP50 - 2*rep.rtt
					extra = fmtSigned(x)
					rel = fmt.Sprintf("%.1f%%", 100*float64(x)/float64(base.st.pairP50))
					r.note = rel
				} else {
					base = r
				}
				rep.rows = append(rep.rows, r)
				fmt.Fprintf(md, "| %s | %d | %.0f | %s | %s | %.0f | %s | %s |\n", mode, c, r.st.rate, fmtD(r.st.pairP50), fmtD(r.st.pairP99), r.allocs, extra, rel)
			}
		}
		md.WriteString("\n")
	}
}

func ginE2E(lk *locker.Locker, c int, mode string) (e2eServer, error) {
	r := gin.New()
	h := func(ctx *gin.Context) { ctx.String(http.StatusOK, "ok") }
	switch mode {
	case "lock tag":
		r.GET("/orders/:id/pay", middleware.Lock(lk, e2eTag), h)
	case "by hand":
		r.GET("/orders/:id/pay", func(ctx *gin.Context) {
			le, err := lk.Obtain(ctx.Request.Context(), "order:"+ctx.Param("id"), locker.Params{TTL: 10 * time.Second})
			if err != nil {
				ctx.String(http.StatusConflict, "busy")
				return
			}
			defer le.Release(ctx.Request.Context())
			h(ctx)
		})
	default:
		r.GET("/orders/:id/pay", h)
	}
	return httpE2E(r, c), nil
}

// shopE2E is shop.v1.Shop with a Buy that answers at once; byHand makes
// it take the lock itself, as the interceptor would.
type shopE2E struct {
	shopv1.UnimplementedShopServer
	lk     *locker.Locker
	byHand bool
}

func (s shopE2E) Buy(ctx context.Context, req *shopv1.BuyRequest) (*shopv1.BuyResponse, error) {
	if s.byHand {
		le, err := s.lk.Obtain(ctx, "item:"+req.GetSku(), locker.Params{Wait: 5 * time.Second})
		if err != nil {
			return nil, status.Error(codes.Aborted, "busy")
		}
		defer le.Release(context.WithoutCancel(ctx))
	}
	return &shopv1.BuyResponse{OrderId: "o", StockLeft: 1}, nil
}

func grpcE2E(lk *locker.Locker, _ int, mode string) (e2eServer, error) {
	var opts []grpc.ServerOption
	if mode == "lock tag" {
		ic, err := interceptor.New(lk, nil) // the proto option on Buy
		if err != nil {
			return e2eServer{}, err
		}
		opts = append(opts, grpc.ChainUnaryInterceptor(ic.Unary()))
	}
	srv := grpc.NewServer(opts...)
	shopv1.RegisterShopServer(srv, shopE2E{lk: lk, byHand: mode == "by hand"})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return e2eServer{}, err
	}
	go func() { _ = srv.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		srv.Stop()
		return e2eServer{}, err
	}
	client := shopv1.NewShopClient(conn)
	return e2eServer{
		do: func(w int) bool {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := client.Buy(ctx, &shopv1.BuyRequest{Sku: "w" + strconv.Itoa(w)})
			return err == nil
		},
		close: func() { _ = conn.Close(); srv.Stop() },
	}, nil
}

// serveE2E serves h on a loopback HTTP server and returns it with a
// client that keeps c connections.
func serveE2E(h http.Handler, c int) (*httptest.Server, *http.Client) {
	srv := httptest.NewServer(h)
	return srv, &http.Client{Transport: &http.Transport{MaxIdleConns: c + 8, MaxIdleConnsPerHost: c + 8}, Timeout: 10 * time.Second}
}

func stdhttpE2E(lk *locker.Locker, c int, mode string) (e2eServer, error) {
	mux := http.NewServeMux()
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	const pattern = "GET /orders/{id}/pay"
	switch mode {
	case "lock tag":
		m, err := stdhttp.NewLock(lk, e2eTag)
		if err != nil {
			return e2eServer{}, err
		}
		if err := m.Handle(mux, pattern, h); err != nil {
			return e2eServer{}, err
		}
	case "by hand":
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			le, err := lk.Obtain(r.Context(), "order:"+r.PathValue("id"), locker.Params{TTL: 10 * time.Second})
			if err != nil {
				http.Error(w, "busy", http.StatusConflict)
				return
			}
			defer le.Release(r.Context())
			h(w, r)
		})
	default:
		mux.Handle(pattern, h)
	}
	return httpE2E(mux, c), nil
}

// httpE2E serves h on loopback; each request is GET /orders/<worker>/pay
// and succeeds on 200. Gin and net/http share it.
func httpE2E(h http.Handler, c int) e2eServer {
	srv, client := serveE2E(h, c)
	return e2eServer{
		do: func(w int) bool {
			resp, err := client.Get(fmt.Sprintf("%s/orders/%d/pay", srv.URL, w))
			if err != nil {
				return false
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		},
		close: func() { client.CloseIdleConnections(); srv.Close() },
	}
}

// connectShopE2E is shopE2E for connect-go.
type connectShopE2E struct {
	shopv1connect.UnimplementedShopHandler
	s shopE2E
}

func (c connectShopE2E) Buy(ctx context.Context, req *connect.Request[shopv1.BuyRequest]) (*connect.Response[shopv1.BuyResponse], error) {
	resp, err := c.s.Buy(ctx, req.Msg)
	if err != nil {
		return nil, connect.NewError(connect.CodeAborted, err)
	}
	return connect.NewResponse(resp), nil
}

func connectE2E(lk *locker.Locker, c int, mode string) (e2eServer, error) {
	var opts []connect.HandlerOption
	if mode == "lock tag" {
		ic, err := connectrpc.New(lk, nil) // the proto option on Buy
		if err != nil {
			return e2eServer{}, err
		}
		opts = append(opts, connect.WithInterceptors(ic))
	}
	mux := http.NewServeMux()
	mux.Handle(shopv1connect.NewShopHandler(connectShopE2E{s: shopE2E{lk: lk, byHand: mode == "by hand"}}, opts...))
	srv, hc := serveE2E(mux, c)
	client := shopv1connect.NewShopClient(hc, srv.URL)
	return e2eServer{
		do: func(w int) bool {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := client.Buy(ctx, connect.NewRequest(&shopv1.BuyRequest{Sku: "w" + strconv.Itoa(w)}))
			return err == nil
		},
		close: func() { hc.CloseIdleConnections(); srv.Close() },
	}, nil
}

func e2eRun(cfg *config, c int, mode string, open func(*locker.Locker, int, string) (e2eServer, error)) row {
	var reqs atomic.Int64
	pool := redigoPool(cfg.addrs[0], c, &reqs)
	defer pool.Close()
	lk, err := locker.New(redigo.New(pool))
	if err != nil {
		fatalf("e2e %s: %v", mode, err)
	}
	defer lk.Close()
	srv, err := open(lk, c, mode)
	if err != nil {
		fatalf("e2e %s: %v", mode, err)
	}
	defer srv.close()

	t0 := time.Now()
	start, end := t0.Add(cfg.warm), t0.Add(cfg.warm+cfg.dur)
	var mu sync.Mutex
	var lat []time.Duration
	var errs atomic.Int64
	var wg sync.WaitGroup
	for w := range c {
		wg.Go(func() {
			var mine []time.Duration
			for {
				t := time.Now()
				if !t.Before(end) {
					break
				}
				if !srv.do(w) {
					errs.Add(1)
				}
				if !t.Before(start) {
					mine = append(mine, time.Since(t))
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	var m0, m1 runtime.MemStats
	time.Sleep(time.Until(start))
	runtime.ReadMemStats(&m0)
	time.Sleep(time.Until(end))
	runtime.ReadMemStats(&m1)
	wg.Wait()
	out := row{scenario: "e2e", c: c}
	out.st.acq = len(lat)
	out.st.rate = float64(len(lat)) / cfg.dur.Seconds()
	out.st.pairP50, out.st.pairP99 = pct(lat, 50), pct(lat, 99)
	out.st.fails = int(errs.Load())
	if len(lat) > 0 {
		out.allocs = float64(m1.Mallocs-m0.Mallocs) / float64(len(lat))
	}
	return out
}

func fmtSigned(d time.Duration) string {
	if d < 0 {
		return "−" + fmtD(-d)
	}
	return "+" + fmtD(d)
}
