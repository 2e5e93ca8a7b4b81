package locker

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// closeGrace is how long Close gives holders to release their leases
// themselves before it releases them.
const closeGrace = time.Second

// errShutDown is the cause a lease's context is cancelled with when its
// Locker shuts down: the lock is about to be released under the holder.
var errShutDown = fmt.Errorf("%w: %w", ErrLockLost, ErrClosed)

// Close shuts the Locker down as Shutdown does, giving holders up to one
// second to release their leases themselves.
func (l *Locker) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), closeGrace)
	defer cancel()
	return l.Shutdown(ctx)
}

// Shutdown stops the Locker and hands on what it holds: Obtain returns
// ErrClosed from now on (waiting calls end with it); every lease's context
// is cancelled with a cause matching ErrLockLost and ErrClosed; leases
// still held when ctx ends are released by the Locker (renewed until then)
// and answer Release with an error matching ErrClosed and ErrNotHeld; then
// the Locker's own connections close (clients and pools given to the
// drivers stay open). A fixed-TTL lease whose context was never asked for
// ends at its TTL unless its holder releases it. Later calls of Shutdown or
// Close wait for the first and return its result. See
// docs/locking.md#shutting-down.
func (l *Locker) Shutdown(ctx context.Context) error {
	first := false
	l.shutOnce.Do(func() { first = true })
	if !first {
		<-l.shut
		return l.shutErr
	}
	defer close(l.shut)
	l.closed.Store(true)
	close(l.closing)
	for _, le := range l.leases.Snapshot() {
		le.shutDown()
	}
	select {
	case <-l.leases.Emptied():
	case <-ctx.Done():
	}
	var errs []error
	for _, le := range l.leases.Snapshot() {
		errs = append(errs, le.releaseForShutdown())
	}
	errs = append(errs, l.be.Close())
	l.shutErr = errors.Join(errs...)
	return l.shutErr
}

// shutDown cancels root's context, if it has one, for a Locker shutting
// down: the holder is to stop and release. The lease stays held (and
// renewed) until then.
func (root *Lease) shutDown() {
	root.kp.Mu.Lock()
	cancel := root.cancel
	root.kp.Mu.Unlock()
	if cancel != nil {
		cancel(errShutDown)
	}
}

// releaseForShutdown releases every hold of root still held when the
// shutdown's grace is over, and ends it with cause errShutDown.
func (root *Lease) releaseForShutdown() error {
	root.kp.Mu.Lock()
	if root.done {
		root.kp.Mu.Unlock()
		return nil
	}
	holds, ttl := root.live, root.t.ttl
	root.kp.StopLocked()
	root.kp.Mu.Unlock()
	cctx, cancel := root.l.o.bounds().Call(context.Background())
	defer cancel()
	var err error
	for range holds {
		// Each release drops one hold in Redis; the last frees the lock
		// and hands it to the next waiter.
		if err = root.l.be.Release(cctx, root.n, root.token, ttl); err != nil {
			break
		}
	}
	root.finish(errShutDown, 0, nil)
	if errors.Is(err, ErrNotHeld) {
		err = nil // it had run out meanwhile
	}
	return err
}
