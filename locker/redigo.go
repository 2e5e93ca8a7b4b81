package locker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"
)

// redigoDriver is the default Driver: a redigo pool for scripts and one
// connection from it for pub/sub.
type redigoDriver struct {
	pool *redis.Pool

	// reserved serves priority calls (IsPriority) when the pool is
	// exhausted; dialled on first need, one call at a time.
	reserved struct {
		sync.Mutex
		c redis.Conn
	}
}

// RedigoDriver returns the Driver that [New] uses: scripts run on connections
// from pool; Listen dials one more connection with the pool's Dial function
// and keeps it for its whole life.
func RedigoDriver(pool *redis.Pool) Driver { return &redigoDriver{pool: pool} }

func (d *redigoDriver) Eval(ctx context.Context, s *Script, keys []string, args ...any) (any, error) {
	if IsPriority(ctx) && d.exhausted() {
		return d.evalReserved(ctx, s, keys, args)
	}
	c, err := d.pool.GetContext(ctx)
	if err != nil {
		if errors.Is(err, redis.ErrPoolExhausted) {
			err = fmt.Errorf("%w (redigo MaxActive reached)", ErrPoolExhausted)
		}
		return nil, notSent(err)
	}
	defer c.Close()
	return d.eval(ctx, c, s, keys, args)
}

// closeReserved closes the reserved connection (Locker.Close).
func (d *redigoDriver) closeReserved() {
	d.reserved.Lock()
	defer d.reserved.Unlock()
	if d.reserved.c != nil {
		_ = d.reserved.c.Close()
		d.reserved.c = nil
	}
}

// exhausted reports whether taking a connection from the pool would fail
// or block.
func (d *redigoDriver) exhausted() bool {
	if d.pool.MaxActive <= 0 {
		return false
	}
	st := d.pool.Stats()
	return st.ActiveCount >= d.pool.MaxActive && st.IdleCount == 0
}

// evalReserved runs a priority call on the reserved connection.
func (d *redigoDriver) evalReserved(ctx context.Context, s *Script, keys []string, args []any) (any, error) {
	d.reserved.Lock()
	defer d.reserved.Unlock()
	if d.reserved.c == nil || d.reserved.c.Err() != nil {
		if d.reserved.c != nil {
			_ = d.reserved.c.Close()
		}
		c, err := d.dial(ctx)
		if err != nil {
			return nil, notSent(err)
		}
		d.reserved.c = c
	}
	return d.eval(ctx, d.reserved.c, s, keys, args)
}

func (d *redigoDriver) dial(ctx context.Context) (redis.Conn, error) {
	switch {
	case d.pool.DialContext != nil:
		return d.pool.DialContext(ctx)
	case d.pool.Dial != nil:
		return d.pool.Dial()
	}
	return nil, errors.New("locker: redis.Pool has neither Dial nor DialContext")
}

func (d *redigoDriver) eval(ctx context.Context, c redis.Conn, s *Script, keys []string, args []any) (any, error) {
	cwt, ok := c.(redis.ConnWithTimeout)
	if !ok {
		return nil, errors.New("locker: redigo connection without timeout support")
	}
	// DoWithTimeout, not DoContext: redigo's DoContext starts a goroutine per
	// call, which costs more than the call on a busy machine. A call in flight
	// is bounded by ctx's deadline instead of interrupted by cancellation.
	var timeout time.Duration
	if dl, ok := ctx.Deadline(); ok {
		if timeout = time.Until(dl); timeout <= 0 {
			return nil, notSent(context.DeadlineExceeded)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, notSent(err)
	}
	argv := scriptArgs(s, keys, args)
	v, err := cwt.DoWithTimeout(timeout, "EVALSHA", argv...)
	if e, ok := err.(redis.Error); ok && strings.HasPrefix(string(e), "NOSCRIPT") {
		argv[0] = s.srcArg
		v, err = cwt.DoWithTimeout(timeout, "EVAL", argv...)
	}
	if err != nil {
		return nil, err
	}
	return normalize(v), nil
}

// scriptArgs builds EVALSHA's arguments: the script's hash, the key count,
// the keys, the arguments. The caller swaps in the source for EVAL.
func scriptArgs(s *Script, keys []string, args []any) []any {
	argv := make([]any, 0, 2+len(keys)+len(args))
	argv = append(argv, s.hashArg, len(keys))
	for _, k := range keys {
		argv = append(argv, k)
	}
	return append(argv, args...)
}

// normalize converts redigo replies to the Driver contract's types.
func normalize(v any) any {
	switch x := v.(type) {
	case []byte:
		return string(x)
	case []any:
		for i := range x {
			x[i] = normalize(x[i])
		}
		return x
	default:
		return v
	}
}

// keepaliveChannel is subscribed by every listener connection; nothing is
// published on it.
const keepaliveChannel = "locktag:listener"

// pingEvery is how often an idle subscriber connection is checked.
const pingEvery = 10 * time.Second

type redigoListener struct {
	psc     redis.PubSubConn
	deliver func(channel, payload string)
	broken  func(error)

	wmu     sync.Mutex // serialises writes
	mu      sync.Mutex
	pending map[string][]chan struct{} // channel -> subscribers awaiting confirmation
	closed  bool
	done    chan struct{}
}

func (d *redigoDriver) Listen(ctx context.Context, deliver func(channel, payload string), broken func(error)) (Listener, error) {
	// A dedicated connection, not a pooled one: it stays in subscriber mode
	// for its whole life and is closed, never returned.
	c, err := d.dial(ctx)
	if err != nil {
		return nil, err
	}
	l := &redigoListener{
		psc:     redis.PubSubConn{Conn: c},
		deliver: deliver,
		broken:  broken,
		pending: make(map[string][]chan struct{}),
		done:    make(chan struct{}),
	}
	// Stay subscribed to one channel for the connection's whole life: with
	// no subscriptions a RESP2 connection leaves subscriber mode and PING
	// answers would no longer parse as pub/sub replies.
	if err := l.psc.Subscribe(keepaliveChannel); err != nil {
		_ = c.Close()
		return nil, err
	}
	go l.read()
	go l.ping()
	return l, nil
}

func (l *redigoListener) read() {
	for {
		switch m := l.psc.ReceiveWithTimeout(3 * pingEvery).(type) {
		case redis.Message:
			l.deliver(m.Channel, string(m.Data))
		case redis.Subscription:
			if m.Kind == "subscribe" {
				l.mu.Lock()
				if w := l.pending[m.Channel]; len(w) > 0 {
					close(w[0])
					if len(w) == 1 {
						delete(l.pending, m.Channel)
					} else {
						l.pending[m.Channel] = w[1:]
					}
				}
				l.mu.Unlock()
			}
		case redis.Pong:
		case error:
			l.mu.Lock()
			closed := l.closed
			l.closed = true
			l.mu.Unlock()
			close(l.done)
			_ = l.psc.Conn.Close()
			if !closed {
				l.broken(m)
			}
			return
		}
	}
}

func (l *redigoListener) ping() {
	t := time.NewTicker(pingEvery)
	defer t.Stop()
	for {
		select {
		case <-l.done:
			return
		case <-t.C:
			l.wmu.Lock()
			_ = l.psc.Ping("")
			l.wmu.Unlock()
		}
	}
}

func (l *redigoListener) Subscribe(ctx context.Context, channel string) error {
	ch := make(chan struct{})
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return errListenerClosed
	}
	l.pending[channel] = append(l.pending[channel], ch)
	l.mu.Unlock()
	l.wmu.Lock()
	err := l.psc.Subscribe(channel)
	l.wmu.Unlock()
	if err != nil {
		return err
	}
	select {
	case <-ch:
		return nil
	case <-l.done:
		return errListenerClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l *redigoListener) Unsubscribe(channel string) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	return l.psc.Unsubscribe(channel)
}

func (l *redigoListener) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.mu.Unlock()
	// Closing the connection makes read return; broken is not called.
	return l.psc.Conn.Close()
}

var errListenerClosed = errors.New("locker: subscriber connection closed")
