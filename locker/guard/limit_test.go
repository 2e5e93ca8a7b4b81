package guard

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/redigo"
)

// TestLimitFull: a `limit` tag's guard reports LimitFull, with a retry
// hint, when every permit is taken, and runs the call when one is free.
func TestLimitFull(t *testing.T) {
	lk := newLocker(t)
	g, err := CompileLock(lk, `key:"t:{v.id}" limit:"1" wait:"20ms"`, sources)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	held, err := lk.Obtain(ctx, "t:1", locker.Params{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	call := func(context.Context) error { ran++; return nil }
	if o := g.Run(ctx, req{"id": "1"}, "r", call); o.Kind != LimitFull || o.RetryAfter <= 0 || ran != 0 {
		t.Fatalf("full: kind %v, retry %v, ran %d; want limit full, a hint, 0", o.Kind, o.RetryAfter, ran)
	}
	// A mutex guard of the same key is apart from the semaphore.
	m, err := CompileLock(lk, `key:"t:{v.id}"`, sources)
	if err != nil {
		t.Fatal(err)
	}
	if o := m.Run(ctx, req{"id": "1"}, "r", call); o.Kind != OK {
		t.Fatalf("mutex of the same key: %v", o.Kind)
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if o := g.Run(ctx, req{"id": "1"}, "r", call); o.Kind != OK || ran != 2 {
		t.Fatalf("free: kind %v, ran %d", o.Kind, ran)
	}
}

// TestLimitRedlockRefused: a `limit` or `mode` tag on a Redlock Locker
// fails when the guard is built, quoting the tag.
func TestLimitRedlockRefused(t *testing.T) {
	var ds []driver.Driver
	for _, srv := range redistest.StartN(t, 3) {
		ds = append(ds, redigo.New(srv.Pool(t)))
	}
	lk, err := locker.NewRedlock(ds)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk.Close() })
	_, err = CompileLock(lk, `key:"t:{v.id}" limit:"5"`, sources)
	if !errors.Is(err, locker.ErrKindUnsupported) || !strings.Contains(err.Error(), `limit:"5"`) {
		t.Fatalf("error %v, want locker.ErrKindUnsupported quoting the tag", err)
	}
	if _, err := CompileLock(lk, `key:"t:{v.id}" mode:"read"`, sources); !errors.Is(err, locker.ErrKindUnsupported) {
		t.Fatalf("mode on Redlock: %v, want locker.ErrKindUnsupported", err)
	}
	if _, err := CompileLock(lk, `key:"t:{v.id}"`, sources); err != nil {
		t.Fatalf("mutex on Redlock: %v", err)
	}
}

// TestReadWriteGuard: read guards share the key, a write guard is busy
// meanwhile.
func TestReadWriteGuard(t *testing.T) {
	lk := newLocker(t)
	rd, err := CompileLock(lk, `key:"i:{v.id}" mode:"read"`, sources)
	if err != nil {
		t.Fatal(err)
	}
	wr, err := CompileLock(lk, `key:"i:{v.id}" mode:"write"`, sources)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var inner, write Outcome
	outer := rd.Run(ctx, req{"id": "1"}, "get", func(context.Context) error {
		inner = rd.Run(ctx, req{"id": "1"}, "get", func(context.Context) error { return nil }) // another request's read
		write = wr.Run(ctx, req{"id": "1"}, "put", func(context.Context) error { return nil })
		return nil
	})
	if outer.Kind != OK || inner.Kind != OK || write.Kind != Busy {
		t.Fatalf("outer read %v, concurrent read %v, write %v; want ok, ok, busy", outer.Kind, inner.Kind, write.Kind)
	}
	if o := wr.Run(ctx, req{"id": "1"}, "put", func(context.Context) error { return nil }); o.Kind != OK {
		t.Fatalf("write after the reads: %v", o.Kind)
	}
}
