package keyexpr

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Rate is a rate tag's limit (fields `rate` and `burst`): in the long run
// at most N requests per Period, and at most Burst at once after a quiet
// spell. A tag with a rate limits how often its key is used; it takes no
// lock.
type Rate struct {
	N      int           // requests per Period; 0: the tag has no rate field
	Period time.Duration // what N is counted over: 1ms to MaxRatePeriod
	Burst  int           // the burst field, or N when it is absent
}

// Interval is the time one request's share of the rate takes, Period/N:
// a steady stream is admitted one request per Interval.
func (r Rate) Interval() time.Duration {
	if r.N <= 0 {
		return 0
	}
	return r.Period / time.Duration(r.N)
}

// The bounds of a rate field.
const (
	// MaxRate is the largest N (and burst) a rate field accepts.
	MaxRate = 1_000_000_000
	// MaxRatePeriod is the longest period a rate field accepts, and the
	// longest a bucket may take to refill (burst × period / N).
	MaxRatePeriod = 365 * 24 * time.Hour
	// MinRateInterval is the shortest share of one request, period / N:
	// the rate limiter counts time in microseconds.
	MinRateInterval = time.Microsecond
)

// parseRate reads a rate field: "N/period", where period is a Go duration
// ("1m", "100ms", "1h30m") or a bare unit meaning one of it ("s", "m",
// "h", "ms").
func parseRate(value string) (Rate, error) {
	bad := func(why string) (Rate, error) {
		return Rate{}, fmt.Errorf("%w: rate %q: %s", ErrBadValue, value, why)
	}
	count, period, ok := strings.Cut(value, "/")
	if !ok {
		return bad(`want requests per period, such as "100/1m", "10/s" or "5/100ms"`)
	}
	n, err := strconv.Atoi(count)
	if err != nil || n < 1 || n > MaxRate || count != strconv.Itoa(n) {
		return bad(fmt.Sprintf("want a whole number of requests from 1 to %d before the '/'", MaxRate))
	}
	if period != "" && period[0] >= 'a' && period[0] <= 'z' {
		period = "1" + period // "s" is one second
	}
	d, err := time.ParseDuration(period)
	switch {
	case err != nil:
		return bad(`want a period after the '/': a Go duration such as "1m" or "100ms", or a unit: "s", "m", "h"`)
	case d < time.Millisecond:
		return bad("the period must be at least 1ms")
	case d > MaxRatePeriod:
		return bad("the period must be at most " + shortDuration(MaxRatePeriod))
	case d/time.Duration(n) < MinRateInterval:
		return bad("more than one request per microsecond; use a longer period or fewer requests")
	}
	return Rate{N: n, Period: d}, nil
}

// parseBurst reads a burst field: a whole number from 1 to MaxRate.
func parseBurst(value string) (int, error) {
	n, err := strconv.Atoi(value)
	if err != nil || n < 1 || n > MaxRate || value != strconv.Itoa(n) {
		return 0, fmt.Errorf("%w: burst %q: want a whole number of requests from 1 to %d", ErrBadValue, value, MaxRate)
	}
	return n, nil
}

// rateConflict reports the rate fields' conflicts, as conflict does: a
// rate with a lock's fields, a burst without a rate, a burst whose bucket
// takes too long to refill. burst is the burst field's value (0: absent).
func (s *Spec) rateConflict(burst int) (a, b string, err error) {
	lockOnly := func(field string) (string, string, error) {
		return field, "rate", fmt.Errorf("%w: rate with %s: a rate tag limits how often its key is used and takes no lock; "+
			"give the lock a tag of its own, after the rate tag", ErrBadValue, field)
	}
	r := s.Rate
	switch {
	case r.N == 0 && burst > 0:
		return "burst", "burst", fmt.Errorf("%w: burst without rate", ErrBadValue)
	case r.N == 0:
		return "", "", nil
	case s.Keys != nil:
		return lockOnly("keys")
	case s.Expire > 0:
		return lockOnly("expire")
	case s.Limit > 0:
		return lockOnly("limit")
	case s.Keep > 0:
		return lockOnly("keep")
	case s.Mode != "":
		return lockOnly("mode")
	case burst > 0 && time.Duration(burst) > MaxRatePeriod/r.Interval():
		return "rate", "burst", fmt.Errorf("%w: burst %d with rate %d/%s: the bucket would take more than %s to refill",
			ErrBadValue, burst, r.N, shortDuration(r.Period), shortDuration(MaxRatePeriod))
	}
	return "", "", nil
}

// shortDuration is d.String() without zero minutes and seconds: "1h",
// not "1h0m0s".
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
