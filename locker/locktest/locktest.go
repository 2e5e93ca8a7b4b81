package locktest

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/redigo"
)

// T is what a Kit needs of a test: *testing.T, *testing.B and *testing.F
// are T, and so is a Standalone, for TestMain and Examples. When t has an
// Output method (testing.TB's), the Lockers log there.
type T interface {
	Helper()
	Cleanup(func())
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
}

// Kit is a Redis for one test and the Lockers on it: Locker, the one to
// give the code under test, and another that plays a second process of
// the same service (Hold, InFlight, Completed). Its methods put a guarded
// handler into the states a test needs, from outside the handler; they
// fail the test (t.Fatal) when they cannot, so call them from the test's
// goroutine. A Kit is made by New and stopped by the test's clean-up.
type Kit struct {
	t      T
	name   string    // "miniredis" or the redis-server program
	emb    *embedded // nil on a redis-server
	srv    server
	cut    *cutter
	lk     *locker.Locker // under test
	other  *locker.Locker // another process
	pools  []*redis.Pool
	output *testOutput
}

// timeout bounds each of the Kit's own calls and waits.
const timeout = 10 * time.Second

// New starts a Redis for t and returns a Kit on it, stopped by t.Cleanup:
// the Lockers are closed (releasing what they hold) before the server
// stops. The server is the embedded miniredis, which runs every script
// locktag's lock kinds, rate limits and idempotency records use (see
// docs/testing.md), unless WithRedisServer or the ServerEnv variable asks
// for a redis-server; when that program is missing, New skips the test
// and says why. The Lockers' log records go to the test's output.
func New(t T, opts ...Option) *Kit {
	t.Helper()
	o := evaluateOptions(opts)
	if o.server == "" {
		o.server = os.Getenv(ServerEnv)
	}
	if o.server == "" {
		o.server = embeddedName
	}
	k := &Kit{t: t, name: o.server, output: &testOutput{w: io.Discard}}
	if ot, ok := t.(interface{ Output() io.Writer }); ok {
		k.output.w = ot.Output()
	}
	t.Cleanup(k.close)
	var err error
	if o.server == embeddedName {
		if k.emb, err = startEmbedded(); err == nil {
			k.srv = k.emb
		}
	} else {
		var p *process
		if p, err = startProcess(o.server); err == nil {
			k.srv = p
		}
	}
	if errors.Is(err, ErrNoServer) {
		t.Skipf("%v (WithRedisServer or %s=%s asked for it)", err, ServerEnv, o.server)
	}
	if err != nil {
		t.Fatalf("%v", err)
	}
	if k.cut, err = newCutter(k.srv.addr()); err != nil {
		t.Fatalf("locktest: %v", err)
	}
	logger := slog.New(slog.NewTextHandler(k.output, &slog.HandlerOptions{Level: slog.LevelInfo}))
	base := []locker.Option{locker.WithLogger(logger)}
	k.lk = k.newLocker(append(base, o.lockerOpts...))
	k.other = k.newLocker(append(base, locker.WithLabel("locktest: another process")))
	return k
}

func (k *Kit) newLocker(opts []locker.Option) *locker.Locker {
	k.t.Helper()
	pool := newPool(k.cut.addr())
	k.pools = append(k.pools, pool)
	lk, err := locker.New(redigo.New(pool), opts...)
	if err != nil {
		k.t.Fatalf("locktest: locker.New: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := lk.Ping(ctx); err != nil {
		_ = lk.Close()
		k.t.Fatalf("locktest: %s: %v", k.name, err)
	}
	return lk
}

func (k *Kit) close() {
	if k.cut != nil {
		k.cut.setDown(false) // the Lockers release what they hold
	}
	for _, lk := range []*locker.Locker{k.lk, k.other} {
		if lk != nil {
			_ = lk.Close()
		}
	}
	for _, p := range k.pools {
		_ = p.Close()
	}
	if k.cut != nil {
		k.cut.close()
	}
	if k.srv != nil {
		k.srv.close()
	}
	k.output.stop()
}

// Locker returns the Locker to give the code under test: the one its
// guards (middleware, interceptors) lock with.
func (k *Kit) Locker() *locker.Locker { return k.lk }

// Server names the server the Kit runs on: "miniredis", or the
// redis-server program it started.
func (k *Kit) Server() string { return k.name }

// Embedded reports whether the Kit runs on the embedded miniredis (and
// so can Advance).
func (k *Kit) Embedded() bool { return k.emb != nil }

// Addr returns the host:port the Kit's Lockers dial, for a client of the
// test's own. Down cuts its connections too.
func (k *Kit) Addr() string { return k.cut.addr() }

// ctx returns a context bounded by the Kit's timeout.
func (k *Kit) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), timeout)
}

// testOutput is the test's output until the Kit is closed, and nothing
// after: a Locker's goroutine may log while the test ends.
type testOutput struct {
	mu sync.Mutex
	w  io.Writer
}

func (o *testOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.w == nil {
		return len(p), nil
	}
	return o.w.Write(p)
}

func (o *testOutput) stop() {
	o.mu.Lock()
	o.w = nil
	o.mu.Unlock()
}
