// Package rate runs the locker's rate limiter on one Redis node: GCRA in
// one script on the server's clock (rate.lua), and the read-only look at a
// rate key (rate_inspect.lua). locker.Allow and locker.InspectRate decide
// the public errors around it.
package rate

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/internal/backend"
	"github.com/locktag/locktag/locker/internal/protocol"
)

// Key is the Redis key of the rate limit named name under prefix.
func Key(prefix, name string) string { return prefix + "{" + name + "}:rate" }

// Decision is rate.lua's answer: admitted or not, the requests left, the
// wait until the reserved slot (admitted) or until a retry can succeed
// (refused), and the time until the whole burst is back.
type Decision struct {
	Admitted  bool
	Remaining int
	Wait      time.Duration
	Reset     time.Duration
}

// Take runs rate.lua once for key: one request of limit per period with a
// bucket of burst, reserving a slot up to maxDelay ahead. Its errors are
// the driver's or a malformed reply's.
func Take(ctx context.Context, nd *backend.Node, key string, period time.Duration, limit, burst int, maxDelay time.Duration) (Decision, error) {
	// One request's share in microseconds, unrounded, as a plain decimal:
	// every Lua's tonumber reads it.
	iv := strconv.FormatFloat(float64(period)/float64(limit)/float64(time.Microsecond), 'f', -1, 64)
	cctx, cancel := nd.Sh.Cfg.Bounds.Call(ctx)
	var args protocol.Args
	args[protocol.ArgIntervalUS] = iv
	args[protocol.ArgBurst] = burst
	args[protocol.ArgMaxDelayUS] = maxDelay.Microseconds()
	v, err := protocol.Rate.Eval(cctx, nd.Drv, driver.NewKeys(key), &args)
	cancel()
	if err != nil {
		return Decision{}, err
	}
	a, ok := v.([]any)
	if !ok || len(a) != 4 {
		return Decision{}, fmt.Errorf("locker: unexpected script reply %v", v)
	}
	var r [4]int64
	for i := range r {
		if r[i], ok = a[i].(int64); !ok {
			return Decision{}, fmt.Errorf("locker: unexpected script reply %v", v)
		}
	}
	return Decision{Admitted: r[0] != 0, Remaining: int(r[1]),
		Wait: time.Duration(r[2]) * time.Microsecond, Reset: time.Duration(r[3]) * time.Microsecond}, nil
}

// State is what Inspect found for a rate key (locker.RateState).
type State struct {
	Burst     int
	Interval  time.Duration
	Remaining int
	Reset     time.Duration
}

// Inspect reads key's state without changing it; ok is false when the key
// is not in Redis (never used, or idle long enough to be full again).
func Inspect(ctx context.Context, nd *backend.Node, key string) (st State, ok bool, err error) {
	cctx, cancel := nd.Sh.Cfg.Bounds.Call(ctx)
	defer cancel()
	v, err := protocol.RateInspect.Eval(cctx, nd.Drv, driver.NewKeys(key), &protocol.Args{})
	if err != nil || v == nil {
		return State{}, false, err
	}
	a, _ := v.([]any)
	if len(a) != 4 {
		return State{}, false, fmt.Errorf("locker: unexpected rate reply %v", v)
	}
	rem, _ := a[0].(int64)
	reset, _ := a[1].(int64)
	burst, _ := a[3].(int64)
	s, _ := a[2].(string)
	iv, perr := strconv.ParseFloat(s, 64)
	if perr != nil {
		return State{}, false, fmt.Errorf("locker: unexpected rate reply %v", v)
	}
	return State{Burst: int(burst), Interval: time.Duration(iv * float64(time.Microsecond)),
		Remaining: int(rem), Reset: time.Duration(reset) * time.Microsecond}, true, nil
}
