package interceptor

import (
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locktag/locktag/interceptor/internal/testpbgrpc"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/locker/guard/retry"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// cutProxy is a TCP proxy on loopback that cuts every connection's
// server-to-client stream after a random number of bytes below span,
// drawn from a seeded source: the calls whose answers were under way on
// it lose them, cut anywhere in a frame, between a message and its
// trailers, or before the first byte. What clients send always reaches
// the server.
type cutProxy struct {
	upstream string
	span     int

	mu  sync.Mutex
	rnd *rand.Rand

	ln    net.Listener
	wg    sync.WaitGroup
	conns sync.Map // net.Conn -> struct{}: open, for close
	cuts  atomic.Int64
}

func newCutProxy(t testing.TB, upstream string, seed uint64, span int) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{upstream: upstream, span: span, rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), ln: ln}
	p.wg.Go(p.accept)
	t.Cleanup(p.close)
	return p
}

func (p *cutProxy) close() {
	_ = p.ln.Close()
	p.conns.Range(func(c, _ any) bool { _ = c.(net.Conn).Close(); return true })
	p.wg.Wait()
}

func (p *cutProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Go(func() { p.serve(c) })
	}
}

func (p *cutProxy) serve(client net.Conn) {
	p.conns.Store(client, struct{}{})
	defer p.conns.Delete(client)
	defer client.Close()
	server, err := net.Dial("tcp", p.upstream)
	if err != nil {
		return
	}
	p.conns.Store(server, struct{}{})
	defer p.conns.Delete(server)
	defer server.Close()
	p.mu.Lock()
	at := p.rnd.IntN(p.span)
	p.mu.Unlock()
	p.wg.Go(func() { _, _ = io.Copy(server, client) })
	buf := make([]byte, 32<<10)
	sent := 0
	for {
		n, err := server.Read(buf)
		if n > 0 {
			if sent+n >= at {
				_, _ = client.Write(buf[:at-sent])
				p.cuts.Add(1)
				return
			}
			if _, werr := client.Write(buf[:n]); werr != nil {
				return
			}
			sent += n
		}
		if err != nil {
			return
		}
	}
}

func cutSeed(t *testing.T) uint64 {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("LOCKTAG_CUT_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("LOCKTAG_CUT_SEED: %v", err)
		}
	}
	t.Logf("proxy seed %d (LOCKTAG_CUT_SEED=%d replays its draws)", seed, seed)
	return seed
}

// gRPC cannot hand a caller a cut answer: a unary call succeeds only
// after its message and then its trailers with status OK arrived, so a
// connection lost anywhere in an answer fails the call with Unavailable,
// which the interceptor retries with the same key. Through a proxy that
// cuts every connection at a random byte, every operation runs once and
// its caller gets the first execution's answer. The control, the same
// run without retries, must end some operations that ran in an error.
// (Calls wait for a connection, in both runs, rather than fail while the
// client reconnects: every operation is sent.)
func TestIdempotentClientCutAnswers(t *testing.T) {
	e := newEnv(t)
	seed := cutSeed(t)
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	ops := make([]string, 96)
	for i := range ops {
		ops[i] = run + "-" + strconv.Itoa(i)
	}
	exercise := func(t *testing.T, p *retry.Policy) (*execLog, *cutProxy, map[string]callResult) {
		ex := &execLog{byKey: map[string]int{}, byOp: map[string]int{}, first: map[string]int64{}}
		g, err := NewIdempotency(e.lk, []string{methodReserve}, guard.WithPublicScope())
		if err != nil {
			t.Fatal(err)
		}
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		s := grpc.NewServer(grpc.ChainUnaryInterceptor(g.Unary()))
		testpbgrpc.RegisterInventoryServer(s, &inventory{reserve: ex.Reserve})
		go func() { _ = s.Serve(lis) }()
		t.Cleanup(s.Stop)
		px := newCutProxy(t, lis.Addr().String(), seed, 1024)
		conn, err := grpc.NewClient(px.ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.Config{BaseDelay: time.Millisecond, Multiplier: 1.6, MaxDelay: 20 * time.Millisecond}, MinConnectTimeout: time.Second}),
			grpc.WithChainUnaryInterceptor(IdempotentUnaryClientInterceptor(p)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = conn.Close() })
		c := testpbgrpc.NewInventoryClient(conn)
		var mu sync.Mutex
		out := map[string]callResult{}
		var wg sync.WaitGroup
		sem := make(chan struct{}, 12)
		for _, op := range ops {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				var r callResult
				r.resp, r.err = c.Reserve(t.Context(), sku(op), grpc.WaitForReady(true))
				mu.Lock()
				out[op] = r
				mu.Unlock()
			})
		}
		wg.Wait()
		return ex, px, out
	}

	t.Run("retried", func(t *testing.T) {
		p := retry.New(retry.WithBackoff(time.Millisecond, 20*time.Millisecond), retry.WithMaxRetryAfter(5*time.Millisecond), retry.WithMaxAttempts(100))
		ex, px, out := exercise(t, p)
		ex.mu.Lock()
		defer ex.mu.Unlock()
		ran := 0
		for _, op := range ops {
			r := out[op]
			switch n := ex.byOp[op]; {
			case n > 1:
				t.Errorf("%s ran %d times", op, n)
			case n == 1:
				ran++
				if r.err != nil || r.resp.GetToken() != ex.first[op] {
					t.Errorf("%s ran (execution %d); its caller got %v, %v", op, ex.first[op], r.resp, r.err)
				}
			default:
				if re := new(RetryError); !errors.As(r.err, &re) || re.Key == "" {
					t.Errorf("%s never ran; its caller got %v: want a RetryError with the key", op, r.err)
				}
			}
		}
		for k, n := range ex.byKey {
			if n != 1 {
				t.Errorf("key %s ran %d times", k, n)
			}
		}
		t.Logf("%d of %d operations ran, each once, all answered; %d connections cut", ran, len(ops), px.cuts.Load())
		if px.cuts.Load() < 2 {
			t.Fatalf("%d connections cut: the run tested nothing", px.cuts.Load())
		}
	})

	t.Run("control: no retries", func(t *testing.T) {
		ex, px, out := exercise(t, retry.New(retry.WithMaxAttempts(1)))
		ex.mu.Lock()
		defer ex.mu.Unlock()
		lost, codesSeen := 0, map[codes.Code]int{}
		for _, op := range ops {
			if r := out[op]; ex.byOp[op] == 1 && r.err != nil {
				lost++
				codesSeen[status.Code(r.err)]++
			}
		}
		t.Logf("control: %d of %d operations ran but ended in an error in their callers (codes %v); %d connections cut", lost, len(ops), codesSeen, px.cuts.Load())
		if lost == 0 {
			t.Fatal("the control lost no answer: the proxy's cuts do not reach callers, and the test cannot catch a client that does not retry them")
		}
		for c := range codesSeen {
			if c != codes.Unavailable {
				t.Errorf("a lost answer gave %v: the interceptor retries only Unavailable for lost connections", c)
			}
		}
	})
}
