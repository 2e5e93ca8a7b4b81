package redigo

import (
	"context"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/locker/driver"
)

// keepaliveChannel is subscribed by every listener connection; nothing is
// published on it.
const keepaliveChannel = "locktag:listener"

// pingEvery is how often an idle subscriber connection is checked.
const pingEvery = 10 * time.Second

type redigoListener struct {
	psc     redis.PubSubConn
	deliver func(channel, payload string)
	broken  func(error)

	wmu sync.Mutex // serialises writes
	c   *driver.Confirmations
}

func (d *redigoDriver) Listen(ctx context.Context, deliver func(channel, payload string), broken func(error)) (driver.Listener, error) {
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
		c:       driver.NewConfirmations(),
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
				l.c.Confirmed(m.Channel)
			}
		case redis.Pong:
		case error:
			first := l.c.End()
			_ = l.psc.Conn.Close()
			if first {
				l.broken(m)
			}
			return
		}
	}
}

// ping pings until the listener ends. A failed PING is not acted on here:
// read's timeout sees a silent connection.
func (l *redigoListener) ping() {
	_ = driver.KeepAlive(pingEvery, l.c.Done(), func() error {
		l.wmu.Lock()
		_ = l.psc.Ping("")
		l.wmu.Unlock()
		return nil
	})
}

func (l *redigoListener) Subscribe(ctx context.Context, channel string) error {
	ch, err := l.c.Expect(channel)
	if err != nil {
		return err
	}
	l.wmu.Lock()
	err = l.psc.Subscribe(channel)
	l.wmu.Unlock()
	if err != nil {
		return err
	}
	return l.c.Await(ctx, ch)
}

func (l *redigoListener) Unsubscribe(channel string) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	return l.psc.Unsubscribe(channel)
}

func (l *redigoListener) Close() error {
	if !l.c.End() {
		return nil
	}
	// Closing the connection makes read return; broken is not called.
	return l.psc.Conn.Close()
}
