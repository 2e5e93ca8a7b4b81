package preflight_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker/internal/backend"
	"github.com/locktag/locktag/locker/internal/callctx"
	"github.com/locktag/locktag/locker/internal/lockerr"
	"github.com/locktag/locktag/locker/internal/preflight"
	"github.com/locktag/locktag/locker/redigo"
)

// ExampleCheck checks a throw-away redis-server before the first lock.
// The server passes: its persistence is off, which is noted in
// Shared.AOFOff and not refused. Ping then costs one trivial script. After
// the server is given a maxmemory with an evicting policy, Check refuses
// it. Failed keeps that error an ErrUnsupported, not an ErrUnavailable.
func ExampleCheck() {
	srv, err := redistest.Launch() // a throw-away redis-server, appendonly off
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	sh := backend.NewShared(backend.Config{Prefix: "example:", Bounds: callctx.Bounds{Timeout: 2 * time.Second}},
		250*time.Millisecond, false, backend.Hooks{Risk: func(what string) { fmt.Println("risk:", what) }})
	nd := backend.New(redigo.New(srv.NewPool()), sh)
	defer nd.Close()
	ctx := context.Background()

	fmt.Println("check:", preflight.Check(ctx, nd), "capable:", nd.Capable.Load(), "aof off:", sh.AOFOff.Load())
	fmt.Println("ping:", preflight.Ping(ctx, nd))
	fs, err := preflight.ReadFacts(ctx, nd)
	fmt.Printf("facts: %+v %v\n", fs, err)

	_, _ = srv.Do("CONFIG", "SET", "maxmemory", "100mb")
	_, _ = srv.Do("CONFIG", "SET", "maxmemory-policy", "allkeys-lru")
	err = preflight.Failed(preflight.Check(ctx, nd))
	fmt.Println(errors.Is(err, lockerr.ErrEvictionPolicy), errors.Is(err, lockerr.ErrUnsupported), errors.Is(err, lockerr.ErrUnavailable))
	// Output:
	// check: <nil> capable: true aof off: true
	// ping: <nil>
	// facts: [{Known:true MaxMemory:0 Policy:noeviction EvictedKeys:0 AOF:false Replica:false Addr:}] <nil>
	// true true false
}
