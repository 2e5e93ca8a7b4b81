package locker_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/redigo"
)

// startReplicated starts a master and one replica of it and waits until
// the replica's link is up.
func startReplicated(t testing.TB) (master, replica *redistest.Server) {
	t.Helper()
	// No delay before the first (diskless) sync: 5s by default.
	master = redistest.Start(t, redistest.WithArgs("--repl-diskless-sync-delay", "0"))
	host, port, _ := strings.Cut(master.Addr(), ":")
	replica = redistest.Start(t, redistest.WithArgs("--replicaof", host, port))
	// Online on the master's side too: WAIT counts only replicas the
	// master has put online, which after a diskless sync waits for the
	// replica's first acknowledgement (up to a second).
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := redis.String(master.Do("INFO", "replication"))
		if err == nil && strings.Contains(info, "state=online") {
			return master, replica
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica not online within 10s: %v", err)
		}
		time.Sleep(5 * time.Millisecond) // polling a server, not synchronising goroutines
	}
}

// replicaHas reports whether the replica has the lock of key now.
func replicaHas(t *testing.T, replica *redistest.Server, key string) bool {
	t.Helper()
	n, err := redis.Int(replica.Do("EXISTS", "locktag:{"+key+"}"))
	if err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// TestReplicaAck: with WithReplicaAck a lock that Obtain returns is on the
// replica already (WAIT confirmed it: no polling needed), through the
// pipelined and the pooled redigo driver, for a first try and for a
// hand-over to a waiter. With the replica frozen, Obtain fails with
// ErrNotReplicated (and ErrUnavailable, not ErrNotObtained) and leaves
// the lock free; a held lock's renewals are not acknowledged, so its
// lease is lost at its local deadline.
func TestReplicaAck(t *testing.T) {
	master, replica := startReplicated(t)
	ctx := context.Background()
	for _, c := range []struct {
		name string
		opts []redigo.Option
	}{{"pipelined", nil}, {"pooled", []redigo.Option{redigo.WithPipelining(0)}}} {
		t.Run(c.name, func(t *testing.T) {
			mk := func(opts ...locker.Option) *locker.Locker {
				return newLockerOn(t, redigo.New(master.Pool(t), c.opts...), opts...)
			}
			// A second's timeout: under -race on a loaded machine a
			// healthy replica's acknowledgement took over 200ms.
			lk := mk(locker.WithReplicaAck(1, time.Second), locker.WithWatchdog(3*time.Second, time.Second))
			key := "ack-" + c.name

			le := mustObtain(t, lk, ctx, key, locker.Params{})
			if !replicaHas(t, replica, key) {
				t.Fatal("Obtain returned before the replica had the lock")
			}
			// A waiter handed the lock confirms the hand-over,
			// acknowledged, before its Obtain returns.
			got := make(chan *locker.Lease, 1)
			go func() {
				w, err := mk(locker.WithReplicaAck(1, time.Second)).Obtain(ctx, key, locker.Params{Wait: 10 * time.Second})
				if err != nil {
					t.Errorf("waiter: %v", err)
				}
				got <- w
			}()
			eventually(t, 10*time.Second, "waiter queued", func() bool { return queueLen(t, master, key) == 1 })
			if err := le.Release(ctx); err != nil {
				t.Fatal(err)
			}
			w := <-got
			if w == nil {
				return
			}
			owner, _ := redis.String(replica.Do("GET", "locktag:{"+key+"}"))
			if !strings.HasPrefix(owner, tokenOf(t, master, key)) || owner == "" {
				t.Fatalf("replica's lock %q is not the waiter's", owner)
			}
			if err := w.Release(ctx); err != nil {
				t.Fatal(err)
			}

			// The replica frozen: nothing is acknowledged.
			held := mustObtain(t, lk, ctx, key+":held", locker.Params{})
			replica.Freeze()
			resumed := false
			resume := func() {
				if !resumed {
					resumed = true
					replica.Thaw()
				}
			}
			defer resume()
			_, err := lk.Obtain(ctx, key, locker.Params{})
			if !errors.Is(err, locker.ErrNotReplicated) || !errors.Is(err, locker.ErrUnavailable) || errors.Is(err, locker.ErrNotObtained) {
				t.Fatalf("Obtain with the replica frozen = %v, want ErrNotReplicated and ErrUnavailable only", err)
			}
			if !strings.Contains(err.Error(), "0 of 1 replicas within 1s") {
				t.Errorf("error %q does not say what WAIT counted", err)
			}
			if n := intReply(t, master, "EXISTS", "locktag:{"+key+"}"); n != 0 {
				t.Fatal("an unacknowledged lock stayed held")
			}
			select {
			case <-held.Context().Done():
			case <-time.After(10 * time.Second):
				t.Fatal("lease kept although no renewal was acknowledged")
			}
			if cause := context.Cause(held.Context()); !errors.Is(cause, locker.ErrLockLost) {
				t.Fatalf("lost lease's cause %v", cause)
			}
			resume()
			eventually(t, 10*time.Second, "acknowledged again", func() bool {
				le, err := lk.Obtain(ctx, key, locker.Params{})
				if err == nil {
					_ = le.Release(ctx)
				}
				return err == nil
			})
		})
	}
}

// tokenOf is the owner token stored in key's lock, "" when free.
func tokenOf(t *testing.T, srv *redistest.Server, key string) string {
	t.Helper()
	v, err := redis.String(srv.Do("GET", "locktag:{"+key+"}"))
	if err != nil && !errors.Is(err, redis.ErrNil) {
		t.Fatal(err)
	}
	owner, _, _ := strings.Cut(v, " ")
	return owner
}

// TestReplicaAckOptions: WithReplicaAck's bad values and combinations
// are refused by New and NewRedlock, naming the option.
func TestReplicaAckOptions(t *testing.T) {
	pool := &redis.Pool{Dial: func() (redis.Conn, error) { return nil, errors.New("no server") }}
	for _, c := range []struct {
		name string
		d    driver.Driver
		opts []locker.Option
		want string
	}{
		{"no replicas", redigo.New(pool), []locker.Option{locker.WithReplicaAck(0, time.Second)}, "WithReplicaAck(0, 1s)"},
		{"no timeout", redigo.New(pool), []locker.Option{locker.WithReplicaAck(1, 0)}, "WithReplicaAck(1, 0s)"},
		{"timeout past the call timeout", redigo.New(pool), []locker.Option{locker.WithReplicaAck(1, 2*time.Second)}, "below the call timeout 2s"},
		{"a driver without WAIT", evalOnly{redigo.New(pool)}, []locker.Option{locker.WithReplicaAck(1, time.Second)}, "cannot WAIT"},
	} {
		if _, err := locker.New(c.d, c.opts...); !errors.Is(err, locker.ErrBadOption) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: New = %v, want ErrBadOption saying %q", c.name, err, c.want)
		}
	}
	if _, err := locker.New(redigo.New(pool), locker.WithReplicaAck(1, 3*time.Second), locker.WithCallTimeout(5*time.Second)); err != nil {
		t.Errorf("a timeout below a raised call timeout: %v", err)
	}
	_, err := locker.NewRedlock([]driver.Driver{redigo.New(pool)}, locker.WithReplicaAck(1, time.Second))
	if !errors.Is(err, locker.ErrBadOption) || !strings.Contains(err.Error(), "WithReplicaAck applies to New only") {
		t.Errorf("NewRedlock = %v, want ErrBadOption", err)
	}
}

// evalOnly hides every optional interface of a driver.
type evalOnly struct{ driver.Driver }

// TestReplicaAckCounts: two replicas asked of a master with one is never
// enough; the error says what WAIT counted, and the lock is released.
func TestReplicaAckCounts(t *testing.T) {
	master, _ := startReplicated(t)
	lk := newLockerOn(t, redigo.New(master.Pool(t)), locker.WithReplicaAck(2, 500*time.Millisecond))
	_, err := lk.Obtain(context.Background(), "ack-two", locker.Params{})
	// (1 of 2 as a rule; 0 when the replica was not scheduled in time.)
	if !errors.Is(err, locker.ErrNotReplicated) || !strings.Contains(err.Error(), " of 2 replicas within 500ms") {
		t.Fatalf("Obtain asking 2 of 1 replicas = %v", err)
	}
	if n := intReply(t, master, "EXISTS", "locktag:{ack-two}"); n != 0 {
		t.Fatal("an unacknowledged lock stayed held")
	}
}
