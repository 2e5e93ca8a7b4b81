package locker_test

import (
	"context"
	"errors"
	"net"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

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

// getting-started.md quotes the error Ping returns with nothing listening
// on the pool's address; it is what Ping really says (with the address of
// the page's example replaced by the one used here).
func TestPingErrorAsGettingStartedSays(t *testing.T) {
	page, err := os.ReadFile("../docs/getting-started.md")
	if err != nil {
		t.Fatal(err)
	}
	quoted := regexp.MustCompile(`(?m)^\s*(locker: redis unavailable: .*127\.0\.0\.1:6379.*)$`).FindSubmatch(page)
	if quoted == nil {
		t.Fatal("getting-started.md quotes no Ping error")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close() // nothing listens there now
	pool := &redis.Pool{DialContext: func(ctx context.Context) (redis.Conn, error) {
		return redis.DialContext(ctx, "tcp", addr, redis.DialConnectTimeout(2*time.Second))
	}}
	lk, err := locker.New(redigo.New(pool))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk.Close() })
	err = lk.Ping(context.Background())
	if !errors.Is(err, locker.ErrUnavailable) {
		t.Fatalf("Ping = %v, want ErrUnavailable", err)
	}
	if want := strings.ReplaceAll(string(quoted[1]), "127.0.0.1:6379", addr); err.Error() != want {
		t.Fatalf("Ping error\n%q\ngetting-started.md says\n%q", err.Error(), want)
	}
}
