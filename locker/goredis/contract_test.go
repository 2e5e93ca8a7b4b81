package goredis_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/driver/drivertest"
	"github.com/locktag/locktag/locker/goredis"
)

// TestContract runs the driver contract on a go-redis client configured as
// docs/scale-out.md recommends (context timeouts on, no retries).
func TestContract(t *testing.T) {
	srv := redistest.Start(t)
	drivertest.Run(t, drivertest.Config{
		Addr: srv.Addr(),
		New: func(t testing.TB, addr string) driver.Driver {
			c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1})
			t.Cleanup(func() { _ = c.Close() })
			return goredis.New(c)
		},
	})
}
