package guard_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/locktag/locktag/locker/redigo"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
)

// exampleRedis is a redis-server started for the examples by TestMain.
var exampleRedis *redistest.Server

func TestMain(m *testing.M) {
	redistest.Main(m, func(s *redistest.Server) { exampleRedis = s })
}

// job is the request type of a tiny adapter for plain function calls: a
// background job with named arguments.
type job struct {
	args map[string]string
}

// jobSources lets templates read {arg.NAME}.
var jobSources = keyexpr.Sources[*job]{
	"arg": func(name string) (keyexpr.Getter[*job], error) {
		if name == "" {
			return nil, errors.New("write {arg.NAME}")
		}
		return func(j *job) (string, error) { return j.args[name], nil }, nil
	},
}

// Example_adapter is a complete adapter for plain function calls: it binds
// its sources once, runs each call through the guard, and maps outcomes to
// its own errors — here, an error string per kind.
func Example_adapter() {
	lk, err := locker.New(redigo.New(exampleRedis.NewPool()))
	if err != nil {
		panic(err)
	}
	defer lk.Close()
	g, err := guard.CompileLock(lk, `key:"invoice:{arg.id}"`, jobSources)
	if err != nil {
		panic(err) // a bad tag: found here, never at run time
	}
	run := func(ctx context.Context, j *job, work func(ctx context.Context) error) error {
		o := g.Run(ctx, j, "invoices", work)
		if o.Kind.Ran() {
			return nil
		}
		return fmt.Errorf("not run: %v", o.Kind) // the adapter decides what a kind means
	}

	ctx := context.Background()
	err = run(ctx, &job{args: map[string]string{"id": "7"}}, func(ctx context.Context) error {
		fmt.Println("holding", locker.FromContext(ctx).Key())
		// A second call for the same invoice, while this one holds it:
		fmt.Println(run(context.Background(), &job{args: map[string]string{"id": "7"}}, nil))
		return nil
	})
	fmt.Println(err)
	fmt.Println(run(ctx, &job{}, nil))
	// Output:
	// holding invoice:7
	// not run: busy
	// <nil>
	// not run: bad key
}

// ExampleIdempotency_Run guards a plain function call with an idempotency
// key: the second call with the key gets the first one's stored answer.
func ExampleIdempotency_Run() {
	lk, err := locker.New(redigo.New(exampleRedis.NewPool()))
	if err != nil {
		panic(err)
	}
	defer lk.Close()
	g, err := guard.NewIdempotency[string](lk, "F1",
		guard.WithScope(func(user string) (string, error) { return user, nil }))
	if err != nil {
		panic(err)
	}
	charge := func(user, key string, cents int) string {
		q := guard.Request{Route: "charge", Keys: []string{key}, Parts: []string{strconv.Itoa(cents)}}
		o := g.Run(context.Background(), user, q, func(context.Context) guard.Answer {
			return guard.Answer{Status: 201, Payload: fmt.Appendf(nil, "charged %d", cents), Sent: true}
		})
		switch o.Kind {
		case guard.OK:
			return "executed"
		case guard.Replay:
			return "replayed " + strconv.Itoa(o.Record.Status) + " " + string(o.Record.Payload)
		}
		return o.Kind.String()
	}
	fmt.Println(charge("alice", "example-k1", 500))
	fmt.Println(charge("alice", "example-k1", 500))
	fmt.Println(charge("alice", "example-k1", 700))
	fmt.Println(charge("bob", "example-k1", 700))
	// Output:
	// executed
	// replayed 201 charged 500
	// mismatch
	// executed
}

// A rate tag on the same tiny adapter: at most 2 sends a minute per
// customer. A refusal says when the next slot comes and how the limit
// stands, which an HTTP or RPC adapter sends to its client.
func ExampleCompileLock_rate() {
	lk, err := locker.New(redigo.New(exampleRedis.NewPool()))
	if err != nil {
		panic(err)
	}
	defer lk.Close()
	g, err := guard.CompileLock(lk, `key:"mail:{arg.customer}" rate:"2/1m" name:"mail"`, jobSources)
	if err != nil {
		panic(err)
	}
	j := &job{args: map[string]string{"customer": "c9"}}
	for range 3 {
		o := g.Run(context.Background(), j, "send", func(context.Context) error { return nil })
		fmt.Println(o.Kind, o.Quota.Remaining, o.Retry().Round(time.Second))
	}
	// Output:
	// ok 1 0s
	// ok 0 0s
	// rate limited 0 30s
}

// ExampleAdapterOption gives an adapter an option of its own, passed in the
// same list as the guard's: the adapter applies its own options to its
// settings, and refuses another adapter's by name.
func ExampleAdapterOption() {
	// The job adapter's settings and its one option.
	type jobSettings struct{ queue string }
	withQueue := func(name string) guard.Option {
		return guard.AdapterOption("lockjob", "WithQueue", guard.LockGuards, func(s *jobSettings) error {
			if name == "" {
				return errors.New("empty queue name")
			}
			s.queue = name
			return nil
		})
	}
	// Another adapter's option.
	type cronSettings struct{ every time.Duration }
	withEvery := guard.AdapterOption("lockcron", "WithEvery", guard.LockGuards, func(s *cronSettings) error {
		s.every = time.Minute
		return nil
	})

	var s jobSettings
	opts := []guard.Option{guard.WithFailOpen(), withQueue("invoices")}
	fmt.Println(guard.ApplyAdapterOptions("lockjob (jobs)", guard.LockGuards, opts, &s), s.queue)

	err := guard.ApplyAdapterOptions("lockjob (jobs)", guard.LockGuards, []guard.Option{withEvery, withQueue("")}, &s)
	fmt.Println(errors.Is(err, locker.ErrBadOption))
	fmt.Println(err)
	// Output:
	// <nil> invoices
	// true
	// locker: bad option: lockcron.WithEvery is an option of lockcron, given to lockjob (jobs)
	// locker: bad option: lockjob.WithQueue: empty queue name
}
