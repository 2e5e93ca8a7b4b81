package locker_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
)

// rwStats is what rwWorkload saw.
type rwStats struct {
	maxReaders   int32 // readers inside at once
	overlaps     int32 // a writer inside with anyone else
	maxWriteWait time.Duration
}

// rwWorkload runs readers and writers goroutines over two Lockers (as if
// two processes) on one key, iters holds each. Readers stay until another
// reader is inside with them (or 20ms passed), so readers that may overlap
// do; writers check that they are alone.
func rwWorkload(t *testing.T, lks []*locker.Locker, readers, writers, iters int, readMode locker.Mode) rwStats {
	t.Helper()
	var inR, inW, maxR, overlaps atomic.Int32
	var maxWait atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, readers+writers)
	run := func(i int, m locker.Mode) {
		lk := lks[i%len(lks)]
		for range iters {
			start := time.Now()
			le, err := lk.Obtain(context.Background(), "rw", locker.Params{Mode: m, Wait: 30 * time.Second})
			if err != nil {
				errs <- err
				return
			}
			if m == locker.Write {
				if w := time.Since(start); int64(w) > maxWait.Load() {
					maxWait.Store(int64(w))
				}
				if inW.Add(1) > 1 || inR.Load() > 0 {
					overlaps.Add(1)
				}
				time.Sleep(time.Millisecond) // the write
				if inR.Load() > 0 {
					overlaps.Add(1)
				}
				inW.Add(-1)
			} else {
				if inW.Load() > 0 {
					overlaps.Add(1)
				}
				r := inR.Add(1)
				for p := maxR.Load(); r > p && !maxR.CompareAndSwap(p, r); p = maxR.Load() {
				}
				for until := time.Now().Add(20 * time.Millisecond); inR.Load() < 2 && time.Now().Before(until); {
					time.Sleep(200 * time.Microsecond) // polling for company
				}
				inR.Add(-1)
			}
			if err := le.Release(context.Background()); err != nil {
				errs <- err
				return
			}
		}
	}
	for i := range readers {
		wg.Go(func() { run(i, readMode) })
	}
	for i := range writers {
		wg.Go(func() { run(i, locker.Write) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return rwStats{maxR.Load(), overlaps.Load(), time.Duration(maxWait.Load())}
}

// TestRWLock: writers never overlap anyone, readers do overlap, and a
// steady stream of readers does not starve the writers.
func TestRWLock(t *testing.T) {
	srv := redistest.Start(t)
	lks := []*locker.Locker{newLocker(t, srv), newLocker(t, srv)}
	s := rwWorkload(t, lks, 8, 2, 15, locker.Read)
	if s.overlaps != 0 {
		t.Fatalf("%d overlaps of a writer with another holder", s.overlaps)
	}
	if s.maxReaders < 2 {
		t.Fatalf("readers never overlapped (max %d inside at once)", s.maxReaders)
	}
	// Readers hold ~20ms at most; FIFO admits a writer after the readers
	// queued before it, never after later ones.
	if s.maxWriteWait > 5*time.Second {
		t.Fatalf("a writer waited %v behind readers", s.maxWriteWait)
	}
	t.Logf("max readers at once %d, longest writer wait %v", s.maxReaders, s.maxWriteWait)
}

// TestRWLockControl: the detector catches readers that take the lock as
// writers would not exclude — "readers" taken as Write never overlap, so
// the reader-overlap check fails for a lock that is exclusive only; and a
// broken lock (each worker on a prefix of its own) is caught as overlaps.
func TestRWLockControl(t *testing.T) {
	srv := redistest.Start(t)
	lks := []*locker.Locker{newLocker(t, srv), newLocker(t, srv)}
	if s := rwWorkload(t, lks, 4, 1, 3, locker.Write); s.maxReaders > 1 {
		t.Fatalf("control: readers taken as writers overlapped (%d)", s.maxReaders)
	}
	broken := []*locker.Locker{newLocker(t, srv, locker.WithKeyPrefix("b1:")), newLocker(t, srv, locker.WithKeyPrefix("b2:"))}
	if s := rwWorkload(t, broken, 4, 2, 10, locker.Read); s.overlaps == 0 {
		t.Fatal("control: the overlap detector missed writers on a broken lock")
	}
}

// TestRWLockFIFO: a queued writer stops later readers; the readers queued
// behind it are admitted together when it releases.
func TestRWLockFIFO(t *testing.T) {
	srv := redistest.Start(t)
	lk, other := newLocker(t, srv), newLocker(t, srv)
	ctx := context.Background()
	r1 := mustObtain(t, lk, ctx, "f", locker.Params{Mode: locker.Read})
	r2 := mustObtain(t, other, ctx, "f", locker.Params{Mode: locker.Read}) // readers share
	wGot := make(chan *locker.Lease, 1)
	go func() {
		le, err := other.Obtain(ctx, "f", locker.Params{Mode: locker.Write, Wait: 10 * time.Second})
		if err != nil {
			t.Error(err)
		}
		wGot <- le
	}()
	eventually(t, 5*time.Second, "writer queued", func() bool { return intReply(t, srv, "ZCARD", "locktag:{f}:rw:q") == 1 })
	if _, err := lk.Obtain(ctx, "f", locker.Params{Mode: locker.Read}); !errors.Is(err, locker.ErrNotObtained) {
		t.Fatalf("a new reader overtook the queued writer: %v", err)
	}
	var readers sync.WaitGroup
	var in atomic.Int32
	release := make(chan struct{})
	for i := range 3 {
		readers.Go(func() {
			le, err := []*locker.Locker{lk, other}[i%2].Obtain(ctx, "f", locker.Params{Mode: locker.Read, Wait: 10 * time.Second})
			if err != nil {
				t.Error(err)
				return
			}
			in.Add(1)
			<-release
			_ = le.Release(ctx)
		})
	}
	eventually(t, 5*time.Second, "readers queued", func() bool { return intReply(t, srv, "ZCARD", "locktag:{f}:rw:q") == 4 })
	_ = r1.Release(ctx)
	_ = r2.Release(ctx)
	w := <-wGot
	if in.Load() != 0 {
		t.Fatalf("%d readers entered with the writer", in.Load())
	}
	_ = w.Release(ctx)
	eventually(t, 5*time.Second, "the queued readers admitted together", func() bool { return in.Load() == 3 })
	close(release)
	readers.Wait()
}

// TestRWLockReentry: read in read and read in write re-enter; write in
// read is refused at once; a writer's token rises, readers see it.
func TestRWLockReentry(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	ctx := context.Background()
	w := mustObtain(t, lk, ctx, "e", locker.Params{Mode: locker.Write})
	in := mustObtain(t, lk, w.Context(), "e", locker.Params{Mode: locker.Read})
	if in.Holds() != 2 || in.Token() != w.Token() {
		t.Fatalf("read in write: holds %d token %d, want 2 and the writer's %d", in.Holds(), in.Token(), w.Token())
	}
	_ = in.Release(ctx)
	_ = w.Release(ctx)
	r := mustObtain(t, lk, ctx, "e", locker.Params{Mode: locker.Read})
	if r.Token() != w.Token() {
		t.Fatalf("reader token %d, want the last writer's %d", r.Token(), w.Token())
	}
	rr := mustObtain(t, lk, r.Context(), "e", locker.Params{Mode: locker.Read})
	if rr.Holds() != 2 {
		t.Fatalf("read in read: holds %d", rr.Holds())
	}
	start := time.Now()
	if _, err := lk.Obtain(r.Context(), "e", locker.Params{Mode: locker.Write, Wait: 10 * time.Second}); !errors.Is(err, locker.ErrWriteInRead) || !errors.Is(err, locker.ErrNotObtained) {
		t.Fatalf("write in read: %v, want ErrWriteInRead", err)
	}
	if time.Since(start) > time.Second {
		t.Fatal("write in read was not refused at once")
	}
	_ = rr.Release(ctx)
	_ = r.Release(ctx)
	w2 := mustObtain(t, lk, ctx, "e", locker.Params{Mode: locker.Write})
	if w2.Token() <= w.Token() {
		t.Fatalf("second writer token %d not above the first's %d", w2.Token(), w.Token())
	}
	_ = w2.Release(ctx)
	if _, err := lk.Obtain(ctx, "e", locker.Params{Mode: locker.Read, Limit: 2}); !errors.Is(err, locker.ErrBadLimit) {
		t.Fatalf("mode with limit: %v", err)
	}
}

// TestRWLockCrashedReader: a reader that stops renewing blocks a writer
// for at most its lease plus slack.
func TestRWLockCrashedReader(t *testing.T) {
	srv := redistest.Start(t)
	crashed, lk := newLocker(t, srv), newLocker(t, srv)
	ctx := context.Background()
	_ = mustObtain(t, crashed, ctx, "c", locker.Params{Mode: locker.Read, TTL: 300 * time.Millisecond}) // never released
	start := time.Now()
	w := mustObtain(t, lk, ctx, "c", locker.Params{Mode: locker.Write, Wait: 5 * time.Second})
	defer w.Release(ctx)
	if took := time.Since(start); took > 300*time.Millisecond+time.Second {
		t.Fatalf("the crashed reader blocked the writer %v, want within its 300ms lease + 1s", took)
	}
}
