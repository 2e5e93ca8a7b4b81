package locker_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/redigo"
)

// listStored pages through ListStored and returns "kind name" of each
// distinct entry, sorted.
func listStored(t *testing.T, lk *locker.Locker, prefix string) []string {
	t.Helper()
	var out []string
	for cursor, pages := "", 0; ; pages++ {
		page, next, err := lk.ListStored(context.Background(), prefix, cursor)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range page {
			if e := s.Kind + " " + s.Name; !slices.Contains(out, e) {
				out = append(out, e)
			}
		}
		if next == "" {
			break
		}
		if pages > 10000 {
			t.Fatal("ListStored does not end")
		}
		cursor = next
	}
	slices.Sort(out)
	return out
}

// ListStored finds each kind's main key once, whatever else the kind
// keeps (queues, records hashes, an idempotency record's waiters), and
// reads no values: a record of another protocol is listed, not refused.
func TestListStored(t *testing.T) {
	srv := redistest.Start(t)
	prefix := locker.WithKeyPrefix("st:")
	lk := newLocker(t, srv, prefix)
	other := newLocker(t, srv, prefix)
	ctx := context.Background()
	hold := func(lk *locker.Locker, name string, p locker.Params) {
		t.Helper()
		mustObtain(t, lk, ctx, name, p)
	}
	hold(lk, "a:m", locker.Params{TTL: time.Minute})
	hold(lk, "a:q", locker.Params{TTL: time.Minute})
	hold(lk, "a:s", locker.Params{TTL: time.Minute, Limit: 2})
	hold(lk, "a:rw", locker.Params{TTL: time.Minute, Mode: locker.Read})
	hold(lk, "a:both", locker.Params{TTL: time.Minute})
	hold(lk, "a:both", locker.Params{TTL: time.Minute, Limit: 3})
	hold(lk, "a*z", locker.Params{TTL: time.Minute})
	hold(lk, "ab", locker.Params{TTL: time.Minute})
	hold(lk, "b:1", locker.Params{TTL: time.Minute})
	if _, err := lk.Allow(ctx, "a:rate", locker.RateParams{Limit: 1, Period: time.Minute}); err != nil {
		t.Fatal(err)
	}
	// A waiter queued for a:q, a semaphore's records hash, a waiter for an
	// in-flight idempotency record (its ":rw" set).
	waitCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	t.Cleanup(func() { stop(); wg.Wait() })
	wg.Go(func() { _, _ = other.Obtain(waitCtx, "a:q", locker.Params{Wait: time.Minute}) })
	record := locker.IdempotencyName("POST /payments", "alice", "k1")
	claim, err := lk.Idempotent(ctx, record, "10 EUR", locker.IdempotencyParams{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = claim.Abandon(ctx) })
	wg.Go(func() {
		_, _ = other.Idempotent(waitCtx, record, "10 EUR", locker.IdempotencyParams{Wait: time.Minute})
	})
	testwait.Eventually(t, "a waiter queued for a:q and one for the record", func() bool {
		q, _ := redis.Int(srv.Do("EXISTS", "st:{a:q}:q"))
		w, _ := redis.Int(srv.Do("EXISTS", "st:{"+record+"}:rw"))
		return q == 1 && w == 1
	})
	if _, err := srv.Do("SET", "st:{a:foreign}", "@2 0 written by a later release"); err != nil {
		t.Fatal(err)
	}

	want := []string{"mutex a:both", "mutex a:foreign", "mutex a:m", "mutex a:q", "rate a:rate", "read/write a:rw", "semaphore a:both", "semaphore a:s"}
	if got := listStored(t, lk, "a:"); !slices.Equal(got, want) {
		t.Errorf("ListStored(a:) = %q\nwant %q", got, want)
	}
	if got, want := listStored(t, lk, "a*"), []string{"mutex a*z"}; !slices.Equal(got, want) {
		t.Errorf("ListStored(a*) = %q, want %q (glob characters are literal)", got, want)
	}
	all := listStored(t, lk, "")
	for _, e := range []string{"idempotency " + record, "mutex b:1", "mutex ab", "mutex a*z"} {
		if !slices.Contains(all, e) {
			t.Errorf("ListStored() lacks %q: %q", e, all)
		}
	}
	if slices.Contains(all, "read/write "+record) {
		t.Errorf("ListStored() lists the record's waiters as a read/write lock: %q", all)
	}
	if len(all) != len(want)+4 {
		t.Errorf("ListStored() = %d entries, want %d: %q", len(all), len(want)+4, all)
	}
	if _, _, err := lk.ListStored(ctx, "", "nonsense"); !errors.Is(err, locker.ErrBadOption) {
		t.Errorf("ListStored with a bad cursor: %v, want ErrBadOption", err)
	}
}

// ReadNotice reads each kind of message the scripts publish, and nothing
// else.
func TestReadNotice(t *testing.T) {
	lk := newLockerOn(t, redigo.New(&redis.Pool{}), locker.WithKeyPrefix("p:"))
	for _, tc := range []struct {
		channel, payload string
		want             string // fmt of the Notice; "" for none
	}{
		{"p:{order:42}:c", "tok 17 1700000000000 5000", "grant order:42 mutex [tok] 17 5s"},
		{"p:{order:42}:s:c", "tok 18 1700000000000 5000", "grant order:42 semaphore [tok] 18 5s"},
		{"p:{order:42}:rw:c", "tok 19 1700000000000", "grant order:42 read/write [tok] 19 0s"},
		{"p:{a}:s}:c", "tok 1 1 1", "grant a}:s mutex [tok] 1 1ms"},
		{"p:{order:42}:c", "-", "free order:42 mutex [] 0 0s"},
		{"p:{order:42}:c", "!sid-1", "dropped order:42 mutex [] 0 0s sid-1"},
		{"p:{idem:x}:rc", "tok 0 0", "record-ended idem:x idempotency [tok] 0 0s"},
		{"p:ctl", "t1,t2 job hung on NFS", "forced   [t1 t2] 0 0s reason=job hung on NFS"},
		{"p:ctl", "t1", ""},
		{"p:{order:42}:c", "!", ""},
		{"p:{order:42}:c", "tok x 1 1", ""},
		{"p:{order:42}:c", "tok 1", ""},
		{"p:{order:42}:q", "tok 1 1 1", ""},
		{"p:check:abc", "0", ""},
		{"q:{order:42}:c", "tok 1 1 1", ""},
		{"p:order:c", "tok 1 1 1", ""},
		{"p:{}:c", "tok 1 1 1", "grant  mutex [tok] 1 1ms"},
	} {
		n, ok := lk.ReadNotice(tc.channel, tc.payload)
		got := ""
		if ok {
			got = fmt.Sprintf("%s %s %s %v %d %v", n.Event, n.Name, n.Kind, n.Owners, n.Fence, n.Lease)
			if n.Subscriber != "" {
				got += " " + n.Subscriber
			}
			if n.Reason != "" {
				got += " reason=" + n.Reason
			}
		}
		if got != tc.want {
			t.Errorf("ReadNotice(%q, %q) = %q, want %q", tc.channel, tc.payload, got, tc.want)
		}
	}
	if got := lk.NoticePattern(); got != "p:*" {
		t.Errorf("NoticePattern() = %q", got)
	}
}

// A subscriber to NoticePattern, as a user with ACLRules and
// +psubscribe, reads a hand-over's grant, a force-release and a record's
// end as they happen.
func TestNoticesPublished(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	other := newLocker(t, srv)
	ctx := context.Background()
	srv.SetUser(t, "watcher", "pw", append(lk.ACLRules(), "+psubscribe")...)
	c, err := redis.Dial("tcp", srv.Addr(), redis.DialUsername("watcher"), redis.DialPassword("pw"))
	if err != nil {
		t.Fatal(err)
	}
	psc := redis.PubSubConn{Conn: c}
	if err := psc.PSubscribe(lk.NoticePattern()); err != nil {
		t.Fatal(err)
	}
	if s, ok := psc.Receive().(redis.Subscription); !ok || s.Kind != "psubscribe" {
		t.Fatalf("PSUBSCRIBE %s as the locker's ACL user: %v", lk.NoticePattern(), s)
	}
	notices := make(chan locker.Notice, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			switch m := psc.Receive().(type) {
			case redis.Message:
				if n, ok := lk.ReadNotice(m.Channel, string(m.Data)); ok {
					notices <- n
				}
			case error:
				return
			}
		}
	}()
	t.Cleanup(func() { _ = c.Close(); <-done })
	next := func(what string) locker.Notice { t.Helper(); return testwait.Recv(t, notices, what) }

	// A release hands a semaphore's permit to another Locker's waiter.
	first := mustObtain(t, lk, ctx, "sem", locker.Params{Limit: 1})
	got := make(chan *locker.Lease, 1)
	go func() {
		le, err := other.Obtain(ctx, "sem", locker.Params{Limit: 1, Wait: time.Minute})
		if err != nil {
			t.Error(err)
		}
		got <- le
	}()
	waitInspected(t, lk, "sem", 1)
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	second := testwait.Recv(t, got, "the waiter's grant")
	n := next("the grant's notice")
	if n.Event != locker.NoticeGrant || n.Kind != locker.KindSemaphore || n.Name != "sem" || n.Fence != second.Token() || n.Lease <= 0 {
		t.Errorf("grant notice %+v, want the semaphore's grant of fence %d", n, second.Token())
	}
	// A force-release: the control channel's notice, then the grant to the
	// next waiter.
	go func() {
		le, err := lk.Obtain(ctx, "sem", locker.Params{Limit: 1, Wait: time.Minute})
		if err != nil {
			t.Error(err)
		}
		got <- le
	}()
	waitInspected(t, lk, "sem", 1)
	st, err := lk.Inspect(ctx, "sem")
	if err != nil {
		t.Fatal(err)
	}
	owner := st.Holders[0].Owner
	if err := other.ForceRelease(ctx, "sem", "stuck"); err != nil {
		t.Fatal(err)
	}
	third := testwait.Recv(t, got, "the grant after the force-release")
	if n := next("the force-release's notice"); n.Event != locker.NoticeForced || !slices.Equal(n.Owners, []string{owner}) || n.Reason != "stuck" || n.Name != "" {
		t.Errorf("force-release notice %+v, want owner %s, reason stuck", n, owner)
	}
	if n := next("the grant's notice"); n.Event != locker.NoticeGrant || n.Fence != third.Token() {
		t.Errorf("notice %+v, want the grant of fence %d", n, third.Token())
	}
	// An idempotency record's end tells its waiter.
	record := locker.IdempotencyName("POST /payments", "alice", "k1")
	claim, err := lk.Idempotent(ctx, record, "10 EUR", locker.IdempotencyParams{})
	if err != nil {
		t.Fatal(err)
	}
	replayed := make(chan error, 1)
	go func() {
		_, err := other.Idempotent(ctx, record, "10 EUR", locker.IdempotencyParams{Wait: time.Minute})
		replayed <- err
	}()
	testwait.Eventually(t, "a caller waiting for the record", func() bool {
		n, _ := redis.Int(srv.Do("SCARD", "locktag:{"+record+"}:rw"))
		return n == 1
	})
	if err := claim.Complete(ctx, []byte("ok")); err != nil {
		t.Fatal(err)
	}
	if err := testwait.Recv(t, replayed, "the waiter's replay"); err != nil {
		t.Fatal(err)
	}
	if n := next("the record's notice"); n.Event != locker.NoticeRecordEnded || n.Kind != locker.KindIdempotency || n.Name != record || len(n.Owners) != 1 {
		t.Errorf("record notice %+v", n)
	}
	_ = third.Release(ctx)
}

// waitInspected waits until Inspect finds queued waiters for name.
func waitInspected(t *testing.T, lk *locker.Locker, name string, queued int) {
	t.Helper()
	testwait.Eventually(t, fmt.Sprintf("%d waiter(s) queued for %s", queued, name), func() bool {
		st, err := lk.Inspect(context.Background(), name)
		return err == nil && st.Queued == queued
	})
}
