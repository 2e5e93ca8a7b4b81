package goredis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktag/locktag/locker/driver"
)

// keepalivePrefix names the channel every listener stays subscribed to for
// its whole life; nothing is published on it. A random suffix puts the
// listener on a random node of a Cluster (go-redis opens a PubSub on the
// master of its first channel's slot).
const keepalivePrefix = "locktag:listener:"

// pingEvery is how often the subscriber connection is checked; a
// connection that answers nothing (no message, no PONG) for three periods
// is broken.
const pingEvery = 10 * time.Second

// dialTimeout bounds Listen when ctx has no deadline.
const dialTimeout = 10 * time.Second

// listener is one go-redis PubSub. Its read goroutine is the only reader;
// Subscribe, Unsubscribe and the pings write through the PubSub, which
// serialises writes itself.
type listener struct {
	ps      *redis.PubSub
	deliver func(channel, payload string)
	broken  func(error)
	c       *driver.Confirmations // ended when broken or closed: broken is not called (again)

	mu    sync.Mutex
	cause error // a write's error that made abort close the PubSub
}

func (d *redisDriver) Listen(ctx context.Context, deliver func(channel, payload string), broken func(error)) (driver.Listener, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, dialTimeout)
		defer cancel()
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	keepalive := keepalivePrefix + hex.EncodeToString(b[:])

	// Subscribe to the keep-alive channel and wait for its confirmation
	// before anything else, so a connection that cannot be opened fails
	// Listen instead of the first waiter.
	ps := d.c.Subscribe(ctx)
	if err := ps.Subscribe(ctx, keepalive); err != nil {
		_ = ps.Close()
		return nil, err
	}
	for {
		m, err := ps.Receive(ctx)
		if err != nil {
			_ = ps.Close()
			return nil, err
		}
		if s, ok := m.(*redis.Subscription); ok && s.Kind == "subscribe" && s.Channel == keepalive {
			break
		}
	}
	l := &listener{
		ps:      ps,
		deliver: deliver,
		broken:  broken,
		c:       driver.NewConfirmations(),
	}
	go l.read()
	go l.ping()
	return l, nil
}

func (l *listener) read() {
	for {
		m, err := l.ps.ReceiveTimeout(context.Background(), 3*pingEvery)
		if err != nil {
			l.fail(err)
			return
		}
		switch m := m.(type) {
		case *redis.Message:
			l.deliver(m.Channel, m.Payload)
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				l.c.Confirmed(m.Channel)
			}
		case *redis.Pong:
		}
	}
}

// fail ends the listener after an error on its connection; only the read
// goroutine calls it. go-redis may already have reconnected and
// re-subscribed underneath, but messages sent in between are lost: the
// PubSub is closed and the locker is told, once.
func (l *listener) fail(err error) {
	l.mu.Lock()
	if l.cause != nil {
		err = l.cause
	}
	l.mu.Unlock()
	if !l.c.End() {
		return // closed by Close
	}
	_ = l.ps.Close()
	l.broken(err)
}

// abort closes the PubSub after a failed write (SUBSCRIBE, UNSUBSCRIBE,
// PING); the read goroutine's Receive then fails and reports err through
// fail. broken is never called from a write: Unsubscribe runs with the
// locker's own lock held, which broken takes too.
func (l *listener) abort(err error) {
	l.mu.Lock()
	if l.cause == nil {
		l.cause = err
	}
	l.mu.Unlock()
	_ = l.ps.Close()
}

// ping pings until the listener ends; a failed PING aborts it.
func (l *listener) ping() {
	err := driver.KeepAlive(pingEvery, l.c.Done(), func() error {
		ctx, cancel := context.WithTimeout(context.Background(), pingEvery)
		defer cancel()
		return l.ps.Ping(ctx)
	})
	if err != nil {
		l.abort(fmt.Errorf("goredis: ping: %w", err))
	}
}

func (l *listener) Subscribe(ctx context.Context, channel string) error {
	ch, err := l.c.Expect(channel)
	if err != nil {
		return err
	}
	if err := l.ps.Subscribe(ctx, channel); err != nil {
		// The connection may have been replaced underneath: see fail.
		l.abort(err)
		return err
	}
	return l.c.Await(ctx, ch)
}

func (l *listener) Unsubscribe(channel string) error {
	if l.c.Ended() {
		return driver.ErrListenerClosed
	}
	ctx, cancel := context.WithTimeout(context.Background(), pingEvery)
	defer cancel()
	if err := l.ps.Unsubscribe(ctx, channel); err != nil {
		l.abort(err)
		return err
	}
	return nil
}

func (l *listener) Close() error {
	if !l.c.End() {
		return nil
	}
	// The reader's Receive fails with ErrClosed and returns; broken is not
	// called for it.
	return l.ps.Close()
}
