package locktest

import "github.com/locktag/locktag/locker"

// ServerEnv names the environment variable that picks the server every
// New starts when no WithEmbedded or WithRedisServer option says: empty or
// "miniredis" for the embedded miniredis (the default), anything else is a
// redis-server program, looked up on PATH or given as a path (for example
// LOCKTAG_LOCKTEST_SERVER=redis-server or =valkey-server), so that a CI
// stage can run the same tests on a real Redis.
const ServerEnv = "LOCKTAG_LOCKTEST_SERVER"

// Option configures New.
type Option func(*options)

type options struct {
	server     string // "" = ServerEnv's choice; embeddedName = miniredis
	lockerOpts []locker.Option
}

const embeddedName = "miniredis"

func evaluateOptions(opts []Option) options {
	o := options{}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// WithRedisServer runs the Kit on a redis-server child process instead of
// the embedded miniredis: bin is the program, a name looked up on PATH or
// a path; "" means "redis-server". When it cannot be found or started,
// New skips the test (t.Skip) and says why. The default is ServerEnv's
// choice, else the embedded miniredis.
func WithRedisServer(bin string) Option {
	return func(o *options) {
		if bin == "" {
			bin = "redis-server"
		}
		o.server = bin
	}
}

// WithEmbedded runs the Kit on the embedded miniredis whatever ServerEnv
// says: for a test that needs Advance. The default is ServerEnv's choice,
// else the embedded miniredis.
func WithEmbedded() Option {
	return func(o *options) { o.server = embeddedName }
}

// WithLockerOptions passes opts to locker.New for the Locker under test
// (Kit.Locker), after the Kit's own: a logger that writes to the test's
// output. The Lockers that play other processes get the Kit's only. The
// default is none.
func WithLockerOptions(opts ...locker.Option) Option {
	return func(o *options) { o.lockerOpts = append(o.lockerOpts, opts...) }
}
