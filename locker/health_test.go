package locker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/redigo"
)

// TestHealthyRedlockQuorum: Ping needs every master, Healthy a majority.
func TestHealthyRedlockQuorum(t *testing.T) {
	srvs := redistest.StartN(t, 3)
	ds := make([]driver.Driver, len(srvs))
	for i, s := range srvs {
		ds[i] = redigo.New(s.Pool(t))
	}
	lk, err := locker.NewRedlock(ds, locker.WithCallTimeout(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk.Close() })
	ctx := context.Background()
	for _, step := range []struct {
		stop           int // masters stopped before this step
		pingOK, health bool
	}{{0, true, true}, {1, false, true}, {2, false, false}} {
		for _, s := range srvs[:step.stop] {
			s.Stop()
		}
		if err := lk.Ping(ctx); (err == nil) != step.pingOK {
			t.Errorf("%d down: Ping = %v", step.stop, err)
		}
		err := lk.Healthy(ctx)
		if (err == nil) != step.health {
			t.Errorf("%d down: Healthy = %v", step.stop, err)
		}
		if err != nil && !errors.Is(err, locker.ErrUnavailable) {
			t.Errorf("Healthy's error %v does not match ErrUnavailable", err)
		}
	}
}
