// Package flaky has a driver.Driver that can be cut off from Redis, for
// tests of what a process does when it can neither renew nor complete.
package flaky

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/locktag/locktag/locker/driver"
)

// ErrDown is what every script returns while the driver is down.
var ErrDown = errors.New("flaky: connection refused")

// Driver passes calls to the wrapped driver, and fails every script with
// ErrDown while Down is set: as if its process were cut off from Redis (or
// dead).
type Driver struct {
	driver.Driver
	Down atomic.Bool
}

// Eval runs the script, unless the driver is down.
func (f *Driver) Eval(ctx context.Context, s *driver.Script, keys driver.Keys, args ...any) (any, error) {
	if f.Down.Load() {
		return nil, ErrDown
	}
	return f.Driver.Eval(ctx, s, keys, args...)
}
