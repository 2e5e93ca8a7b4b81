package rueidis

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/redis/rueidis"

	"github.com/locktag/locktag/locker/driver"
)

// source gives the driver its client.
type source interface {
	// client returns the client, or why there is none yet.
	client(ctx context.Context) (rueidis.Client, error)
	// close closes the client if the driver made it.
	close()
}

// fixed is a client the caller made and keeps (New).
type fixed struct{ c rueidis.Client }

func (f fixed) client(context.Context) (rueidis.Client, error) { return f.c, nil }
func (f fixed) close()                                         {}

// lazy makes its client with rueidis.NewClient on first need, and again
// after a failed attempt, one attempt at a time (NewFromOption). Callers
// wait for the attempt under way, no longer than their context.
type lazy struct {
	opt rueidis.ClientOption
	c   atomic.Pointer[rueidis.Client] // set once an attempt succeeded

	mu      sync.Mutex
	attempt chan struct{} // closed when the attempt under way ends; nil: none
	err     error         // the last attempt's error
	closed  bool
}

func newLazy(opt rueidis.ClientOption) *lazy { return &lazy{opt: opt} }

func (l *lazy) client(ctx context.Context) (rueidis.Client, error) {
	if c := l.c.Load(); c != nil {
		return *c, nil
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, rueidis.ErrClosing
	}
	if l.attempt == nil {
		l.attempt = make(chan struct{})
		go l.dial(l.attempt)
	}
	ch := l.attempt
	l.mu.Unlock()
	select {
	case <-ch:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if c := l.c.Load(); c != nil {
		return *c, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return nil, l.err
}

// dial makes the client; rueidis.NewClient bounds itself by the dialer's
// timeout (ClientOption.Dialer.Timeout, rueidis' default 5s).
func (l *lazy) dial(done chan struct{}) {
	c, err := rueidis.NewClient(l.opt)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err != nil:
		l.err = err
	case l.closed:
		c.Close()
		l.err = rueidis.ErrClosing
	default:
		l.c.Store(&c)
	}
	l.attempt = nil
	close(done)
}

func (l *lazy) close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	if c := l.c.Load(); c != nil {
		(*c).Close()
	}
}

// dedicate takes a dedicated connection from c's pool for blocking
// commands, waiting no longer than ctx: rueidis' Dedicate waits for a free
// connection without a context when the pool (BlockingPoolSize) is
// exhausted. The connection itself is dialled on its first command.
func dedicate(ctx context.Context, c rueidis.Client) (rueidis.DedicatedClient, func(), error) {
	type dedicated struct {
		dc      rueidis.DedicatedClient
		release func()
	}
	got := make(chan dedicated, 1)
	go func() {
		dc, release := c.Dedicate()
		got <- dedicated{dc, release}
	}()
	select {
	case d := <-got:
		return d.dc, d.release, nil
	case <-ctx.Done():
		go func() { (<-got).release() }() // given back once rueidis has one
		return nil, nil, fmt.Errorf("%w: no dedicated connection from rueidis' pool: %w", driver.ErrNotSent, ctx.Err())
	}
}
