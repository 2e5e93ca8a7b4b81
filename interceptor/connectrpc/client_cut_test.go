package connectrpc_test

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/locktag/locktag/interceptor/connectrpc"
	"github.com/locktag/locktag/interceptor/connectrpc/internal/rpccore/testpb"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/locker/guard/retry"
)

// cutProxy is a TCP proxy on loopback that cuts answers at points drawn
// from a seeded source; what clients send always reaches the server.
//
// For HTTP/1.1, one exchange per connection (span 0): it reads the
// server's whole answer and, for a share (rate) of the connections,
// delivers only part of it: nothing, or up to a random byte of its head,
// or up to a random byte of its body (the message). For HTTP/2 (span >
// 0), where a connection carries many calls, it cuts every connection's
// server-to-client stream after a random number of bytes below span.
type cutProxy struct {
	upstream string
	rate     float64
	span     int

	mu  sync.Mutex
	rnd *rand.Rand

	ln                  net.Listener
	wg                  sync.WaitGroup
	conns               sync.Map // net.Conn -> struct{}: open, for close
	early, head, inBody atomic.Int64
}

func newCutProxy(t testing.TB, upstream string, seed uint64, rate float64, span int) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{upstream: upstream, rate: rate, span: span, rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), ln: ln}
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

// draw returns -1 to deliver an answer whole, or how many of its bytes
// to deliver.
func (p *cutProxy) draw(answer []byte) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rnd.Float64() >= p.rate {
		return -1
	}
	end := bytes.Index(answer, []byte("\r\n\r\n")) + 4
	if end < 4 || end >= len(answer) {
		return p.rnd.IntN(len(answer) + 1)
	}
	switch p.rnd.IntN(3) {
	case 0:
		p.early.Add(1)
		return 0
	case 1:
		p.head.Add(1)
		return 1 + p.rnd.IntN(end-1)
	}
	p.inBody.Add(1)
	return end + p.rnd.IntN(len(answer)-end)
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
	p.wg.Go(func() { _, _ = io.Copy(server, client) })
	if p.span > 0 {
		p.mu.Lock()
		at := p.rnd.IntN(p.span)
		p.mu.Unlock()
		_, _ = io.CopyN(client, server, int64(at))
		p.inBody.Add(1) // a connection cut
		return
	}
	answer, err := io.ReadAll(server) // the server closes after one answer
	if err != nil || len(answer) == 0 {
		return
	}
	if n := p.draw(answer); n >= 0 {
		answer = answer[:n]
	}
	_, _ = client.Write(answer)
}

// summary says what the proxy cut.
func (p *cutProxy) summary() string {
	if p.span > 0 {
		return strconv.FormatInt(p.inBody.Load(), 10) + " connections cut"
	}
	return "answers cut: " + strconv.FormatInt(p.early.Load(), 10) + " before the first byte, " +
		strconv.FormatInt(p.head.Load(), 10) + " in the head, " + strconv.FormatInt(p.inBody.Load(), 10) + " in the message"
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

// Through a proxy that cuts answers — over HTTP/1.1 30% of them, before
// their first byte, in their head or in their message; over HTTP/2 every
// connection at a random byte — every operation that ran on the server
// ends in its caller with its first answer, and none runs twice, over the
// Connect, gRPC-Web and gRPC protocols. connect-go reports an answer cut
// in its message as CodeUnknown or CodeInternal, not CodeUnavailable: the
// interceptor must retry those too. The control, the same run without
// retries, must end some operations that ran in an error.
func TestIdempotentClientCutAnswers(t *testing.T) {
	lk := newLocker(t)
	seed := cutSeed(t)
	h2c := new(http.Protocols)
	h2c.SetUnencryptedHTTP2(true)
	for _, proto := range []struct {
		name string
		opt  []connect.ClientOption
		h2c  bool // HTTP/2 without TLS, many calls per connection
	}{
		{"connect", nil, false},
		{"grpc-web", []connect.ClientOption{connect.WithGRPCWeb()}, false},
		{"grpc over HTTP/2", []connect.ClientOption{connect.WithGRPC()}, true},
	} {
		t.Run(proto.name, func(t *testing.T) {
			run := strconv.FormatInt(time.Now().UnixNano(), 36)
			ops := make([]string, 96)
			for i := range ops {
				ops[i] = run + "-" + strconv.Itoa(i)
			}
			exercise := func(t *testing.T, p *retry.Policy) (*execLog, *cutProxy, map[string]outcome) {
				ex := &execLog{byKey: map[string]int{}, byOp: map[string]int{}, first: map[string]int64{}}
				ig, err := connectrpc.NewIdempotency(lk, []string{reserve}, guard.WithPublicScope())
				if err != nil {
					t.Fatal(err)
				}
				mux := http.NewServeMux()
				mux.Handle(reserve, connect.NewUnaryHandler(reserve, ex.reserve, connect.WithInterceptors(ig)))
				srv := httptest.NewUnstartedServer(mux)
				// No keep-alives over HTTP/1.1: one answer per connection, and
				// net/http's Transport resends nothing by itself.
				base := &http.Transport{DisableKeepAlives: true}
				span := 0
				if proto.h2c {
					srv.Config.Protocols, base.Protocols, base.DisableKeepAlives, span = h2c, h2c, false, 2048
				}
				srv.Start()
				t.Cleanup(srv.Close)
				px := newCutProxy(t, srv.Listener.Addr().String(), seed, 0.3, span)
				t.Cleanup(base.CloseIdleConnections)
				opts := append([]connect.ClientOption{connect.WithInterceptors(connectrpc.NewIdempotentClient(p))}, proto.opt...)
				c := connect.NewClient[testpb.ReserveRequest, testpb.ReserveResponse](&http.Client{Transport: base}, "http://"+px.ln.Addr().String()+reserve, opts...)
				var mu sync.Mutex
				out := map[string]outcome{}
				var wg sync.WaitGroup
				sem := make(chan struct{}, 12)
				for _, op := range ops {
					wg.Go(func() {
						sem <- struct{}{}
						defer func() { <-sem }()
						resp, err := call(t.Context(), c, op)
						o := outcome{err: err}
						if err == nil {
							o.token = resp.Msg.GetToken()
						}
						mu.Lock()
						out[op] = o
						mu.Unlock()
					})
				}
				wg.Wait()
				return ex, px, out
			}

			t.Run("retried", func(t *testing.T) {
				p := retry.New(retry.WithBackoff(time.Millisecond, 5*time.Millisecond), retry.WithMaxRetryAfter(5*time.Millisecond), retry.WithMaxAttempts(30))
				ex, px, out := exercise(t, p)
				ex.mu.Lock()
				defer ex.mu.Unlock()
				ran := 0
				for _, op := range ops {
					o := out[op]
					switch n := ex.byOp[op]; {
					case n > 1:
						t.Errorf("%s ran %d times", op, n)
					case n == 1:
						ran++
						if o.err != nil || o.token != ex.first[op] {
							t.Errorf("%s ran (execution %d); its caller got %d, %v", op, ex.first[op], o.token, o.err)
						}
					default:
						if re := new(connectrpc.RetryError); !errors.As(o.err, &re) || re.Key == "" {
							t.Errorf("%s never ran; its caller got %v: want a RetryError with the key", op, o.err)
						}
					}
				}
				for k, n := range ex.byKey {
					if n != 1 {
						t.Errorf("key %s ran %d times", k, n)
					}
				}
				t.Logf("%d of %d operations ran, each once, all answered; %s", ran, len(ops), px.summary())
				if px.inBody.Load() == 0 || (!proto.h2c && px.early.Load() == 0) {
					t.Fatal("no answer cut before its first byte, or none in its message: the run tested nothing")
				}
			})

			t.Run("control: no retries", func(t *testing.T) {
				ex, px, out := exercise(t, retry.New(retry.WithMaxAttempts(1)))
				ex.mu.Lock()
				defer ex.mu.Unlock()
				lost, codes := 0, map[connect.Code]int{}
				for _, op := range ops {
					if o := out[op]; ex.byOp[op] == 1 && o.err != nil {
						lost++
						codes[connect.CodeOf(o.err)]++
					}
				}
				t.Logf("control: %d of %d operations ran but ended in an error in their callers (codes %v); %s", lost, len(ops), codes, px.summary())
				if lost == 0 {
					t.Fatal("the control lost no answer: the proxy's cuts do not reach callers")
				}
				if codes[connect.CodeUnavailable] == lost {
					t.Fatal("every lost answer was CodeUnavailable: the run never cut an answer in its message, which connect-go reports with other codes")
				}
			})
		})
	}
}

// outcome is what one operation's caller ended with.
type outcome struct {
	token int64
	err   error
}
