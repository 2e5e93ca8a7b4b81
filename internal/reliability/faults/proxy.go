package faults

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/gomodule/redigo/redis"
	"github.com/rs/zerolog"
)

// Stream is the direction a toxic acts on.
type Stream string

const (
	// Upstream is client to Redis: commands.
	Upstream Stream = "upstream"
	// Downstream is Redis to client: replies. A toxic here lets the server
	// apply a command and loses, delays or cuts its reply.
	Downstream Stream = "downstream"
)

// Proxy is one toxiproxy proxy on a free loopback port in front of upstream.
// It is stopped when the test ends. Its methods are safe for concurrent use.
type Proxy struct {
	t  testing.TB
	p  *toxiproxy.Proxy
	n  atomic.Int64 // toxic name counter
	up string
}

var proxyServer = toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())

func init() {
	// Some toxics (bandwidth) log through zerolog's global logger at trace
	// level; a test binary that imports this package wants none of it.
	zerolog.SetGlobalLevel(zerolog.Disabled)
}

// NewProxy starts a proxy to upstream (host:port) on 127.0.0.1, port chosen
// by the kernel.
func NewProxy(t testing.TB, upstream string) *Proxy {
	t.Helper()
	p := toxiproxy.NewProxy(proxyServer, fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano()), "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		t.Fatalf("faults: start proxy to %s: %v", upstream, err)
	}
	px := &Proxy{t: t, p: p, up: upstream}
	t.Cleanup(p.Stop)
	return px
}

// Addr is the proxy's listening address; clients dial it instead of Redis.
func (px *Proxy) Addr() string {
	px.p.Lock()
	defer px.p.Unlock()
	return px.p.Listen
}

// Upstream is the address the proxy forwards to.
func (px *Proxy) Upstream() string { return px.up }

// add installs a toxic and returns its name, for Remove.
func (px *Proxy) add(kind string, s Stream, toxicity float64, attrs string) string {
	px.t.Helper()
	name := fmt.Sprintf("%s_%s_%d", kind, s, px.n.Add(1))
	js := fmt.Sprintf(`{"name":%q,"type":%q,"stream":%q,"toxicity":%g,"attributes":{%s}}`, name, kind, s, toxicity, attrs)
	if _, err := px.p.Toxics.AddToxicJson(strings.NewReader(js)); err != nil {
		px.t.Fatalf("faults: add toxic %s: %v", js, err)
	}
	return name
}

// Latency delays every chunk of data on s by d (plus or minus jitter).
// Connections already open are affected too.
func (px *Proxy) Latency(s Stream, d, jitter time.Duration) string {
	return px.add("latency", s, 1, fmt.Sprintf(`"latency":%d,"jitter":%d`, d.Milliseconds(), jitter.Milliseconds()))
}

// Timeout swallows all data on s (a black hole: the peer sees a silent
// connection) and, if closeAfter > 0, closes the connection after it.
func (px *Proxy) Timeout(s Stream, closeAfter time.Duration) string {
	return px.add("timeout", s, 1, fmt.Sprintf(`"timeout":%d`, closeAfter.Milliseconds()))
}

// ResetPeer resets (TCP RST) each connection after it when data arrives on
// s: after 0, the first byte of a command (Upstream) or of a reply
// (Downstream) is lost with its connection.
func (px *Proxy) ResetPeer(s Stream, after time.Duration) string {
	return px.add("reset_peer", s, 1, fmt.Sprintf(`"timeout":%d`, after.Milliseconds()))
}

// Bandwidth caps the rate of s to kbps kilobytes per second.
func (px *Proxy) Bandwidth(s Stream, kbps int64) string {
	return px.add("bandwidth", s, 1, fmt.Sprintf(`"rate":%d`, kbps))
}

// Remove removes the toxic named name (as returned by the adders).
func (px *Proxy) Remove(name string) {
	px.t.Helper()
	if err := px.p.Toxics.RemoveToxic(context.Background(), name); err != nil {
		px.t.Fatalf("faults: remove toxic %s: %v", name, err)
	}
}

// Clear removes every toxic.
func (px *Proxy) Clear() { px.p.Toxics.ResetToxics(context.Background()) }

// Partition closes the listener and every connection through the proxy, so
// the upstream is unreachable (connections are refused) until Heal.
func (px *Proxy) Partition() { px.p.Stop() }

// Heal starts accepting connections again after Partition, on the same port.
func (px *Proxy) Heal() {
	px.t.Helper()
	px.p.Lock()
	enabled := px.p.Enabled
	px.p.Unlock()
	if enabled {
		return
	}
	var err error
	// The port may linger for a moment after the listener closed.
	for range 50 {
		if err = px.p.Start(); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond) // back-off before rebinding the port
	}
	px.t.Fatalf("faults: heal proxy: %v", err)
}

// PoolOptions tune Pool.
type PoolOptions struct {
	MaxActive   int           // 0: no cap
	Wait        bool          // wait for a free connection when MaxActive is reached
	Timeout     time.Duration // dial, read and write timeout; default 5s
	DialOptions []redis.DialOption
}

// Pool returns a redigo pool whose connections go through the proxy. It is
// closed when the test ends.
func (px *Proxy) Pool(t testing.TB, o PoolOptions) *redis.Pool {
	return NewPool(t, px.Addr(), o)
}

// NewPool returns a redigo pool to addr with the given options, closed when
// the test ends.
func NewPool(t testing.TB, addr string, o PoolOptions) *redis.Pool {
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	opts := append([]redis.DialOption{
		redis.DialConnectTimeout(o.Timeout),
		redis.DialReadTimeout(o.Timeout),
		redis.DialWriteTimeout(o.Timeout),
	}, o.DialOptions...)
	p := &redis.Pool{
		MaxIdle:     64,
		MaxActive:   o.MaxActive,
		Wait:        o.Wait,
		IdleTimeout: time.Minute,
		DialContext: func(ctx context.Context) (redis.Conn, error) {
			return redis.DialContext(ctx, "tcp", addr, opts...)
		},
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}
