package logs_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"time"

	"github.com/locktag/locktag/locker/internal/keeper"
	"github.com/locktag/locktag/locker/internal/logs"
)

// ExampleLogger_Lost logs a watchdog lease whose renewals failed; without
// Keys the record names the lock by its route, never by its key.
func ExampleLogger_Lost() {
	h := slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey || a.Key == "held_for" {
			return slog.Attr{}
		}
		return a
	}})
	g := logs.Logger{L: slog.New(h), SID: "locker-1"}
	lk := logs.Lock{Name: "POST /orders/:id/pay", Key: "order:42", Fence: 7, Watchdog: true, Since: time.Now()}
	g.Lost(lk, keeper.Expired, errors.New("i/o timeout"))
	g.Release(context.Background(), lk, errors.New("i/o timeout"))
	// Output:
	// level=ERROR msg="locktag: lock lost" cause="renewals failed until the lease ran out" error="i/o timeout" locktag.lock.name="POST /orders/:id/pay" locktag.lock.fence=7 locktag.locker.id=locker-1
	// level=WARN msg="locktag: release failed" cause="release failed: the lock stays held until its lease runs out" error="i/o timeout" locktag.lock.name="POST /orders/:id/pay" locktag.lock.fence=7 locktag.locker.id=locker-1
}
