package locker_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/redigo"
)

// An operator's tool lists everything a service keeps under its prefix:
// locks of each kind, idempotency records and rate keys.
func ExampleLocker_ListStored() {
	lk, err := locker.New(redigo.New(examplePool()), locker.WithKeyPrefix("example-stored:"))
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()
	ctx := context.Background()
	lease, err := lk.Obtain(ctx, "order:42", locker.Params{})
	if err != nil {
		log.Fatal(err)
	}
	defer lease.Release(ctx)
	permit, err := lk.Obtain(ctx, "exports", locker.Params{Limit: 2})
	if err != nil {
		log.Fatal(err)
	}
	defer permit.Release(ctx)
	if _, err := lk.Allow(ctx, "api:alice", locker.RateParams{Limit: 10, Period: time.Second}); err != nil {
		log.Fatal(err)
	}
	claim, err := lk.Idempotent(ctx, locker.IdempotencyName("POST /payments", "alice", "k1"), "10 EUR", locker.IdempotencyParams{})
	if err != nil {
		log.Fatal(err)
	}
	defer claim.Abandon(ctx)

	var found []string
	for cursor := ""; ; {
		page, next, err := lk.ListStored(ctx, "", cursor)
		if err != nil {
			log.Fatal(err) // ErrUnavailable: retry the same cursor
		}
		for _, s := range page {
			name := s.Name
			if s.Kind == locker.KindIdempotency {
				name = name[:5] + "…" // a hash: IdempotencyName's
			}
			found = append(found, s.Kind+" "+name)
		}
		if cursor = next; cursor == "" {
			break
		}
	}
	slices.Sort(found)
	fmt.Println(strings.Join(found, "\n"))
	// Output:
	// idempotency idem:…
	// mutex order:42
	// rate api:alice
	// semaphore exports
}

// A watcher subscribes to NoticePattern and reads what the scripts
// publish: here a force-release, and the hand-over of the lock to the
// waiter of another process.
func ExampleLocker_ReadNotice() {
	quiet := locker.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError + 1})))
	lk, err := locker.New(redigo.New(examplePool()), locker.WithKeyPrefix("example-notice:"), quiet)
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()
	other, err := locker.New(redigo.New(examplePool()), locker.WithKeyPrefix("example-notice:"))
	if err != nil {
		log.Fatal(err)
	}
	defer other.Close()
	ctx := context.Background()

	pool := examplePool()
	defer pool.Close()
	psc := redis.PubSubConn{Conn: pool.Get()}
	defer psc.Close()
	if err := psc.PSubscribe(lk.NoticePattern()); err != nil {
		log.Fatal(err)
	}
	psc.Receive() // the subscription's confirmation

	lease, err := lk.Obtain(ctx, "report:2026-11", locker.Params{})
	if err != nil {
		log.Fatal(err)
	}
	granted := make(chan int64)
	go func() {
		next, err := other.Obtain(ctx, "report:2026-11", locker.Params{Wait: time.Minute})
		if err != nil {
			log.Fatal(err)
		}
		defer next.Release(ctx)
		granted <- next.Token()
	}()
	for { // until the waiter is queued
		st, err := lk.Inspect(ctx, "report:2026-11")
		if err != nil {
			log.Fatal(err)
		}
		if st.Queued == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if err := lk.ForceRelease(ctx, "report:2026-11", "job hung"); err != nil {
		log.Fatal(err)
	}
	fence := <-granted
	for range 2 {
		m, ok := psc.Receive().(redis.Message)
		if !ok {
			log.Fatal("subscription ended")
		}
		n, ok := lk.ReadNotice(m.Channel, string(m.Data))
		if !ok {
			continue
		}
		switch n.Event {
		case locker.NoticeForced:
			fmt.Println(n.Event, n.Reason, len(n.Owners))
		case locker.NoticeGrant:
			fmt.Println(n.Event, n.Kind, n.Name, n.Fence == fence, n.Fence > lease.Token())
		}
	}
	// Output:
	// forced job hung 1
	// grant mutex report:2026-11 true true
}
