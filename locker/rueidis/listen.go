package rueidis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/locktag/locktag/locker/driver"
)

// keepalivePrefix names the channel every listener stays subscribed to for
// its whole life; nothing is published on it. It keeps a RESP2 connection
// in subscriber mode, makes Listen fail when no subscription can be made,
// and its random suffix puts the listener on a random node of a Cluster.
const keepalivePrefix = "locktag:listener:"

// writeTimeout bounds one SUBSCRIBE or UNSUBSCRIBE of the listener's
// writer; dialTimeout bounds Listen when ctx has no deadline.
const (
	writeTimeout = 10 * time.Second
	dialTimeout  = 10 * time.Second
)

// clusterListenTries bounds Listen's tries on a Cluster: with one node of
// 6 down, a try meets it about one time in 6 to 10 (measured), so all 8
// do less than once in a million Listens.
const clusterListenTries = 8

// listener is one dedicated rueidis connection in subscriber mode. rueidis'
// reading goroutine calls the hooks (deliver, confirmations) in order; one
// writer goroutine sends the subscriptions in the order they were asked
// for, so Unsubscribe returns without waiting for Redis's answer (it is
// called with the locker's lock held, which deliver takes too) and a
// later Subscribe of the same channel cannot overtake it.
type listener struct {
	dc      rueidis.DedicatedClient
	release func()
	c       *driver.Confirmations // ended when broken or closed: broken is not called (again)
	broken  func(error)

	mu    sync.Mutex
	queue []write       // waiting for the writer, oldest first
	wake  chan struct{} // a write was queued (buffered 1)
	cause error         // a write's failure that made abort close the connection
}

// write is one command for the writer; done, when not nil, gets its error.
type write struct {
	cmd  rueidis.Completed
	done chan error
}

func (d *rueidisDriver) Listen(ctx context.Context, deliver func(channel, payload string), broken func(error)) (driver.Listener, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, dialTimeout)
		defer cancel()
	}
	c, err := d.src.client(ctx)
	if err != nil {
		return nil, driver.NotSent(err)
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	keepalive := keepalivePrefix + hex.EncodeToString(b[:])
	// A Cluster client dedicates a connection to a node it picks at random
	// among all it knows (its start-up addresses too), a replica that is
	// down among them: one that cannot be dialled is tried again.
	tries := 1
	if c.Mode() == rueidis.ClientModeCluster {
		tries = clusterListenTries
	}
	for ; ; tries-- {
		l, errs, err := listen(ctx, c, keepalive, deliver, broken)
		if err == nil {
			go l.watch(errs)
			go l.write()
			return l, nil
		}
		if tries <= 1 || !sentNothing(err) || ctx.Err() != nil {
			return nil, err
		}
	}
}

// listen opens one listener on a dedicated connection of c, subscribed
// to keepalive; errs reports the connection's end (see watch).
func listen(ctx context.Context, c rueidis.Client, keepalive string, deliver func(channel, payload string), broken func(error)) (*listener, <-chan error, error) {
	dc, release, err := dedicate(ctx, c)
	if err != nil {
		return nil, nil, err
	}
	l := &listener{
		dc:      dc,
		release: release,
		c:       driver.NewConfirmations(),
		broken:  broken,
		wake:    make(chan struct{}, 1),
	}
	errs := dc.SetPubSubHooks(rueidis.PubSubHooks{
		OnMessage: func(m rueidis.PubSubMessage) { deliver(m.Channel, m.Message) },
		OnSubscription: func(s rueidis.PubSubSubscription) {
			if s.Kind == "subscribe" {
				l.c.Confirmed(s.Channel)
			}
		},
	})
	// The keep-alive subscription is confirmed before Listen returns, so a
	// connection that cannot be opened fails Listen, not the first waiter.
	if err := dc.Do(ctx, dc.B().Subscribe().Channel(keepalive).Build()).Error(); err != nil {
		l.c.End()
		dc.Close()
		release()
		return nil, nil, err
	}
	return l, errs, nil
}

// watch waits for the connection's end: rueidis reports it on errs (a
// failed read or write, an unanswered PING, a close). Unless the listener
// was closed, the locker is told once; it opens a new Listener and every
// waiter subscribes again and re-checks its lock.
func (l *listener) watch(errs <-chan error) {
	err, ok := <-errs
	if !ok || err == nil {
		err = driver.ErrListenerClosed
	}
	l.mu.Lock()
	if l.cause != nil {
		err = l.cause
	}
	l.mu.Unlock()
	if !l.c.End() {
		return // closed by Close
	}
	l.dc.Close()
	l.release()
	l.broken(err)
}

// write sends the queued commands one at a time until the listener ends.
func (l *listener) write() {
	for {
		select {
		case <-l.c.Done():
			l.drain()
			return
		case <-l.wake:
		}
		for {
			w, ok := l.next()
			if !ok {
				break
			}
			ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
			res := l.dc.Do(ctx, w.cmd)
			cancel()
			err := res.Error()
			if w.done != nil {
				w.done <- err
			}
			switch {
			case res.NonRedisError() != nil:
				l.abort(fmt.Errorf("rueidis: subscriber connection: %w", err))
			case err != nil && w.done != nil:
				// A refused SUBSCRIBE is never confirmed: its caller
				// would stay registered for a confirmation. Start over
				// on a new connection, as for a failed write.
				l.abort(fmt.Errorf("rueidis: SUBSCRIBE: %w", err))
			}
		}
	}
}

func (l *listener) next() (write, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.queue) == 0 {
		return write{}, false
	}
	w := l.queue[0]
	l.queue[0] = write{}
	l.queue = l.queue[1:]
	return w, true
}

// drain fails the writes still queued when the listener ended.
func (l *listener) drain() {
	l.mu.Lock()
	q := l.queue
	l.queue = nil
	l.mu.Unlock()
	for _, w := range q {
		if w.done != nil {
			w.done <- driver.ErrListenerClosed
		}
	}
}

func (l *listener) enqueue(w write) error {
	l.mu.Lock()
	if l.c.Ended() {
		l.mu.Unlock()
		return driver.ErrListenerClosed
	}
	l.queue = append(l.queue, w)
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
	return nil
}

// abort closes the connection after a failed write; watch then reports
// err, once. broken is never called from a write: Unsubscribe runs with the
// locker's own lock held, which broken takes too.
func (l *listener) abort(err error) {
	l.mu.Lock()
	if l.cause == nil {
		l.cause = err
	}
	l.mu.Unlock()
	l.dc.Close()
}

func (l *listener) Subscribe(ctx context.Context, channel string) error {
	ch, err := l.c.Expect(channel)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	if err := l.enqueue(write{cmd: l.dc.B().Subscribe().Channel(channel).Build(), done: done}); err != nil {
		return err
	}
	select {
	case err := <-done:
		if err != nil {
			return err
		}
	case <-l.c.Done():
		return driver.ErrListenerClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	return l.c.Await(ctx, ch)
}

func (l *listener) Unsubscribe(channel string) error {
	return l.enqueue(write{cmd: l.dc.B().Unsubscribe().Channel(channel).Build()})
}

func (l *listener) Close() error {
	if !l.c.End() {
		return nil
	}
	// watch sees rueidis' ErrClosing and returns without calling broken.
	l.dc.Close()
	l.release()
	return nil
}
