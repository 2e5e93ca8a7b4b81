package driver

import (
	"context"
	"errors"
	"sync"
)

// ErrListenerClosed is returned by a Listener's Subscribe once its
// connection broke or it was closed.
var ErrListenerClosed = errors.New("locker: subscriber connection closed")

// Confirmations is the bookkeeping every Listener needs, whatever its
// client: it pairs each SUBSCRIBE a caller sends with the server's
// confirmation, which the listener's one reading goroutine sees (in the
// order the commands were written), and it knows whether the listener is
// still alive. Use NewConfirmations; it is safe for concurrent use.
type Confirmations struct {
	mu      sync.Mutex
	pending map[string][]chan struct{} // channel -> Subscribe calls awaiting confirmation, oldest first
	ended   bool
	done    chan struct{}
}

// NewConfirmations returns the bookkeeping of a live listener.
func NewConfirmations() *Confirmations {
	return &Confirmations{pending: make(map[string][]chan struct{}), done: make(chan struct{})}
}

// Expect registers a SUBSCRIBE of channel that the caller is about to send,
// and returns what to Await. It fails with ErrListenerClosed once the
// listener has ended.
func (c *Confirmations) Expect(channel string) (<-chan struct{}, error) {
	ch := make(chan struct{})
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return nil, ErrListenerClosed
	}
	c.pending[channel] = append(c.pending[channel], ch)
	return ch, nil
}

// Confirmed is called by the reading goroutine for each subscribe
// confirmation of channel: it wakes the oldest caller waiting for one.
func (c *Confirmations) Confirmed(channel string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.pending[channel]
	if len(w) == 0 {
		return
	}
	close(w[0])
	if len(w) == 1 {
		delete(c.pending, channel)
	} else {
		c.pending[channel] = w[1:]
	}
}

// Await waits for the confirmation ch (from Expect): nil when it came,
// ErrListenerClosed when the listener ended first, ctx's error when ctx
// ended first.
func (c *Confirmations) Await(ctx context.Context, ch <-chan struct{}) error {
	select {
	case <-ch:
		return nil
	case <-c.done:
		return ErrListenerClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// End marks the listener ended (its connection broke, or it was closed)
// and reports whether this call ended it: only that caller reports a broken
// connection or closes it, so the locker hears of a break at most once and
// never after Close.
func (c *Confirmations) End() (first bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return false
	}
	c.ended = true
	close(c.done)
	return true
}

// Ended reports whether End was called.
func (c *Confirmations) Ended() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ended
}

// Done is closed when the listener ends.
func (c *Confirmations) Done() <-chan struct{} { return c.done }
