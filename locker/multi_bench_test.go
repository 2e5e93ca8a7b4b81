package locker_test

import (
	"context"
	"testing"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
)

// BenchmarkMultiKey: lock and unlock two free keys — with ObtainMany, and
// with two Obtain calls in a row — beside one key with Obtain; read as
// ratios to mutex.
func BenchmarkMultiKey(b *testing.B) {
	srv := redistest.Start(b)
	lk := newLocker(b, srv)
	ctx := context.Background()
	b.Run("mutex", func(b *testing.B) {
		for b.Loop() {
			le, err := lk.Obtain(ctx, "m", locker.Params{})
			if err != nil {
				b.Fatal(err)
			}
			_ = le.Release(ctx)
		}
	})
	b.Run("two-obtains", func(b *testing.B) {
		for b.Loop() {
			x, err := lk.Obtain(ctx, "x", locker.Params{})
			if err != nil {
				b.Fatal(err)
			}
			y, err := lk.Obtain(ctx, "y", locker.Params{})
			if err != nil {
				b.Fatal(err)
			}
			_ = y.Release(ctx)
			_ = x.Release(ctx)
		}
	})
	b.Run("obtain-many-2", func(b *testing.B) {
		for b.Loop() {
			le, err := lk.ObtainMany(ctx, []string{"y", "x"}, locker.Params{})
			if err != nil {
				b.Fatal(err)
			}
			_ = le.Release(ctx)
		}
	})
}
