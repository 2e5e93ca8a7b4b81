package retry

import "time"

// Option configures New.
type Option func(*settings)

type settings struct {
	maxAttempts   int
	base, maxWait time.Duration
	maxHint       time.Duration
	budget        time.Duration
	retryBusy     bool
	onRetry       func(Event)
	newKey        func() string
}

var defaults = settings{
	maxAttempts: 5,
	base:        100 * time.Millisecond,
	maxWait:     5 * time.Second,
	maxHint:     10 * time.Second,
	budget:      30 * time.Second,
	newKey:      NewKey,
}

// WithMaxAttempts caps the attempts of one operation, the first included;
// n < 1 is taken as 1 (no retries). The default is 5.
func WithMaxAttempts(n int) Option {
	return func(s *settings) { s.maxAttempts = max(n, 1) }
}

// WithBackoff sets the backoff: before retry n (n = 1, 2, ...) a client
// waits a random time between half and all of base·2^(n-1), at most
// limit. Non-positive values keep the defaults: 100ms and 5s.
func WithBackoff(base, limit time.Duration) Option {
	return func(s *settings) {
		if base > 0 {
			s.base = base
		}
		if limit > 0 {
			s.maxWait = limit
		}
		s.maxWait = max(s.maxWait, s.base)
	}
}

// WithMaxRetryAfter caps the delay a server's hint (Retry-After,
// google.rpc.RetryInfo) can impose before one retry: a longer hint is
// waited for only this long. The default is 10s; d <= 0 ignores hints.
func WithMaxRetryAfter(d time.Duration) Option {
	return func(s *settings) { s.maxHint = max(d, 0) }
}

// WithBudget caps the time from an operation's first attempt to the start
// of its last one: a retry that would start later is not made, and the
// operation fails with ErrBudgetExhausted. The caller's context deadline,
// if sooner, caps it too. The default is 30s; d <= 0 keeps it.
func WithBudget(d time.Duration) Option {
	return func(s *settings) {
		if d > 0 {
			s.budget = d
		}
	}
}

// WithRetryBusy retries Busy outcomes (409 lock-busy, ABORTED with reason
// LOCK_BUSY): the server's lock is held by another operation. The default
// is false: the server has already waited its tag's `wait` for the lock,
// and a busy lock usually means a conflicting operation the caller should
// hear about; retrying is safe, as the refused request did not run.
func WithRetryBusy(on bool) Option {
	return func(s *settings) { s.retryBusy = on }
}

// WithOnRetry calls f before each wait for a retry, e.g. to log or count
// retries. f must be quick and safe for concurrent use. None by default.
func WithOnRetry(f func(Event)) Option {
	return func(s *settings) { s.onRetry = f }
}

// WithNewKey sets the function that mints a key for an operation whose
// caller set none. Keys must be 1 to 255 bytes of printable ASCII (the
// server's limit; see FormatKey). The default is NewKey; nil keeps it.
func WithNewKey(f func() string) Option {
	return func(s *settings) {
		if f != nil {
			s.newKey = f
		}
	}
}
