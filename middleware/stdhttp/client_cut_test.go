package stdhttp_test

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/locker/guard/retry"
	"github.com/locktag/locktag/middleware/stdhttp"
)

// cutProxy is a TCP proxy on loopback that loses some answers: for each
// connection it draws (from a seeded source) whether to cut the answer,
// and where — before its first byte, or after a random number of bytes
// below span. The request always reaches the server in full.
type cutProxy struct {
	upstream string
	rate     float64 // share of connections whose answer is cut
	span     int     // a mid-answer cut falls in the answer's first span bytes

	mu  sync.Mutex
	rnd *rand.Rand

	ln      net.Listener
	wg      sync.WaitGroup
	conns   sync.Map // net.Conn -> struct{}: open, for Close
	early   atomic.Int64
	midway  atomic.Int64
	clients atomic.Int64
}

// newCutProxy starts a proxy to upstream; it stops when the test ends.
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

func (p *cutProxy) addr() string { return p.ln.Addr().String() }

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
		p.clients.Add(1)
		p.wg.Go(func() { p.serve(c) })
	}
}

// draw decides one connection's fate: cut is false to pass the answer
// whole; at is 0 to cut before its first byte, else the bytes let through.
func (p *cutProxy) draw() (cut bool, at int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rnd.Float64() >= p.rate {
		return false, 0
	}
	if p.rnd.IntN(2) == 0 {
		return true, 0
	}
	return true, 1 + p.rnd.IntN(p.span-1)
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
	cut, at := p.draw()
	p.wg.Go(func() {
		_, _ = io.Copy(server, client)
		_ = server.(*net.TCPConn).CloseWrite()
	})
	buf := make([]byte, 32<<10)
	sent := 0
	for {
		n, err := server.Read(buf)
		if n > 0 {
			switch {
			case cut && at == 0: // the server answered; the client gets nothing
				p.early.Add(1)
				return
			case cut && sent+n >= at:
				_, _ = client.Write(buf[:at-sent])
				p.midway.Add(1)
				return
			}
			if _, werr := client.Write(buf[:n]); werr != nil {
				return
			}
			sent += n
		}
		if err != nil {
			_ = client.(*net.TCPConn).CloseWrite()
			return
		}
	}
}

// cutSeed is the proxy's seed: LOCKTAG_CUT_SEED if set, else the clock.
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

// bigAnswers is a guarded handler whose answers are answerSize bytes,
// each naming its operation (X-Op) and execution; it counts executions
// per operation and per key and keeps each operation's answer and key.
type bigAnswers struct {
	mu    sync.Mutex
	n     int
	byOp  map[string]int
	byKey map[string]int
	first map[string]string
	keyOf map[string]string
}

const answerSize = 8 << 10

func newBigAnswers() *bigAnswers {
	return &bigAnswers{byOp: map[string]int{}, byKey: map[string]int{}, first: map[string]string{}, keyOf: map[string]string{}}
}

func (b *bigAnswers) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	op, key := r.Header.Get("X-Op"), r.Header.Get("Idempotency-Key")
	b.mu.Lock()
	b.n++
	b.byOp[op]++
	b.byKey[key]++
	line := fmt.Sprintf("operation %s, execution %d\n", op, b.n)
	answer := strings.Repeat(line, answerSize/len(line)+1)[:answerSize]
	if _, ok := b.first[op]; !ok {
		b.first[op], b.keyOf[op] = answer, key
	}
	b.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain")
	_, _ = io.WriteString(w, answer)
}

// outcome is what one operation's caller ended with.
type outcome struct {
	status int
	body   string
	key    string // IdempotencyKeyOf the response, or the RetryError's
	err    error  // from the round trip or from reading the body
}

// Through a proxy that cuts 30% of the answers — half before their first
// byte, half at a random byte — every operation that ran on the server
// ends in its caller with the full answer, and none runs twice. The
// control, the same run with buffering off, must end some operations that
// ran in an error: the proxy's cuts reach the callers.
func TestRetryTransportCutAnswers(t *testing.T) {
	lk := newLocker(t)
	seed := cutSeed(t)
	policy := retry.New(retry.WithBackoff(time.Millisecond, 5*time.Millisecond), retry.WithMaxRetryAfter(5*time.Millisecond),
		retry.WithMaxAttempts(30))
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	ops := make([]string, 96)
	for i := range ops {
		ops[i] = run + "-" + strconv.Itoa(i)
	}

	exercise := func(t *testing.T, opts ...stdhttp.RetryOption) (*bigAnswers, *cutProxy, map[string]outcome) {
		srv := newBigAnswers()
		ts := httptest.NewServer(stdhttp.MustIdempotency(lk, guard.WithPublicScope()).Wrap(srv))
		t.Cleanup(ts.Close)
		px := newCutProxy(t, ts.Listener.Addr().String(), seed, 0.3, answerSize+256)
		// No keep-alives: one answer per connection, so the proxy's draw is
		// per answer; and net/http's Transport resends nothing by itself.
		base := &http.Transport{DisableKeepAlives: true}
		t.Cleanup(base.CloseIdleConnections)
		client := &http.Client{Transport: stdhttp.NewRetryTransport(base, policy, opts...)}
		var mu sync.Mutex
		out := map[string]outcome{}
		var wg sync.WaitGroup
		sem := make(chan struct{}, 12)
		for _, op := range ops {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				var o outcome
				req, _ := http.NewRequestWithContext(t.Context(), "POST", "http://"+px.addr()+"/payments", strings.NewReader(`{"op":"`+op+`"}`))
				req.Header.Set("X-Op", op)
				resp, err := client.Do(req)
				if err != nil {
					o.err = err
					if re := new(stdhttp.RetryError); errors.As(err, &re) {
						o.key = re.Key
					}
				} else {
					o.status, o.key = resp.StatusCode, stdhttp.IdempotencyKeyOf(resp)
					b, rerr := io.ReadAll(resp.Body)
					_ = resp.Body.Close()
					o.body, o.err = string(b), rerr
				}
				mu.Lock()
				out[op] = o
				mu.Unlock()
			})
		}
		wg.Wait()
		return srv, px, out
	}

	t.Run("buffered", func(t *testing.T) {
		srv, px, out := exercise(t)
		srv.mu.Lock()
		defer srv.mu.Unlock()
		ran := 0
		for _, op := range ops {
			o := out[op]
			switch n := srv.byOp[op]; {
			case n > 1:
				t.Errorf("%s ran %d times", op, n)
			case n == 1:
				ran++
				if o.err != nil || o.status != 200 || o.body != srv.first[op] || o.key != srv.keyOf[op] {
					t.Errorf("%s ran; its caller got %d, %d bytes (want %d), key %s (the server saw %s), error %v",
						op, o.status, len(o.body), len(srv.first[op]), o.key, srv.keyOf[op], o.err)
				}
			case o.err == nil || o.key == "":
				t.Errorf("%s never ran; its caller got %d, %v, key %q: want an error with the key", op, o.status, o.err, o.key)
			}
		}
		for k, n := range srv.byKey {
			if n != 1 {
				t.Errorf("key %s ran %d times", k, n)
			}
		}
		t.Logf("%d of %d operations ran, each once, all complete in their callers; %d connections, %d answers cut before their first byte, %d midway",
			ran, len(ops), px.clients.Load(), px.early.Load(), px.midway.Load())
		if px.early.Load() == 0 || px.midway.Load() == 0 {
			t.Fatalf("the proxy cut %d answers before the first byte and %d midway: the run tested nothing", px.early.Load(), px.midway.Load())
		}
	})

	t.Run("control: buffering off", func(t *testing.T) {
		srv, px, out := exercise(t, stdhttp.WithMaxBufferedBody(0))
		srv.mu.Lock()
		defer srv.mu.Unlock()
		lost := 0
		for _, op := range ops {
			o := out[op]
			if srv.byOp[op] > 1 {
				t.Errorf("%s ran %d times", op, srv.byOp[op])
			}
			if srv.byOp[op] == 1 && (o.err != nil || o.body != srv.first[op]) {
				lost++
			}
		}
		t.Logf("control: %d of %d operations ran but ended in an error in their callers; %d connections, %d answers cut before their first byte, %d midway",
			lost, len(ops), px.clients.Load(), px.early.Load(), px.midway.Load())
		if lost == 0 {
			t.Fatal("the control lost no answer: the proxy's cuts do not reach callers, and the test cannot catch a transport that returns a cut body")
		}
	})
}
