package locker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
)

func newLocker(t *testing.T, srv *redistest.Server, opts ...locker.Option) *locker.Locker {
	t.Helper()
	lk := locker.New(srv.Pool(t), opts...)
	t.Cleanup(func() { _ = lk.Close() })
	return lk
}

func TestObtainRelease(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	ctx := context.Background()
	le, err := lk.Obtain(ctx, "a", locker.Params{TTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lk.Obtain(ctx, "a", locker.Params{}); !errors.Is(err, locker.ErrNotObtained) {
		t.Fatalf("second obtain: %v, want ErrNotObtained", err)
	}
	if err := le.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := le.Release(ctx); !errors.Is(err, locker.ErrNotHeld) {
		t.Fatalf("double release: %v", err)
	}
	le2, err := lk.Obtain(ctx, "a", locker.Params{})
	if err != nil {
		t.Fatal(err)
	}
	if le2.Token() <= le.Token() {
		t.Fatalf("fence not increasing: %d then %d", le.Token(), le2.Token())
	}
	done := make(chan error, 1)
	go func() {
		le3, err := lk.Obtain(ctx, "a", locker.Params{Wait: 5 * time.Second})
		if err == nil {
			err = le3.Release(ctx)
		}
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	_ = le2.Release(ctx)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
