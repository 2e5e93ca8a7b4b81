package protocol

import (
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
)

// TestLockKeyOutlivesQueue: while a waiter is queued the lock key lives at
// least as long as the queue (a mutex writes no other key), also after the holder's
// lease ended, so the free acquire's SET NX cannot pass a queued waiter;
// a newcomer that finds the lease over hands the lock to the queue's head
// instead, and a release that puts a value back keeps its expiry.
func TestLockKeyOutlivesQueue(t *testing.T) {
	srv := redistest.Start(t)
	keys := lockKeys("q", "", false)
	pttl := func(k string) int64 {
		t.Helper()
		n, err := redis.Int64(srv.Do("PTTL", k))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if r := reply(eval(t, srv, Acquire, keys, "holder", 300, 0, AcquireNew.Arg(), "s1", 250)); r != "#" {
		t.Fatalf("holder: %s", r)
	}
	if r := reply(eval(t, srv, Acquire, keys, "waiter", 10000, 5000, AcquireNew.Arg(), "s2", 250)); !strings.HasPrefix(r, "[0 0 0 ") {
		t.Fatalf("waiter: %s, want queued", r)
	}
	if l, q := pttl(keys[0]), pttl(keys[1]); l < q || q <= 5000 {
		t.Fatalf("PTTL lock %d, queue %d: the lock must outlive the queue", l, q)
	}
	if d := pttl(keys[2]); d != -2 {
		t.Fatalf("PTTL of the third key %d: a mutex keeps its waiters in its queue alone", d)
	}

	// Not the owner: the value goes back as it was, expiry and all.
	before, _ := redis.String(srv.Do("GET", keys[0]))
	beforeTTL := pttl(keys[0])
	if r := reply(eval(t, srv, Release, keys, "other", HandoffGrant, 250)); r != "-1" {
		t.Fatalf("release by another: %s", r)
	}
	after, _ := redis.String(srv.Do("GET", keys[0]))
	if afterTTL := pttl(keys[0]); after != before || afterTTL > beforeTTL || afterTTL < beforeTTL-50 {
		t.Fatalf("release by another changed the lock: %q (PTTL %d) -> %q (PTTL %d)", before, beforeTTL, after, afterTTL)
	}

	// The holder's lease ends; its key stays for the queue.
	testwait.Within(t, 5*time.Second, "the holder's lease is over", func() bool {
		r := reply(eval(t, srv, PTTL, keys[:1], "holder"))
		return r == "-1"
	})
	if n, _ := redis.Int(srv.Do("EXISTS", keys[0])); n != 1 {
		t.Fatal("the lock key went before its queue")
	}
	if r := reply(eval(t, srv, Release, keys, "holder", HandoffGrant, 250)); r != "-1" {
		t.Fatalf("release after the lease: %s, want -1", r)
	}
	// A newcomer that does not wait: the queue's head gets the lock.
	if r := reply(eval(t, srv, Acquire, keys, "newcomer", 10000, 0, AcquireNew.Arg(), "s3", 250)); !strings.HasPrefix(r, "[0 0 0 ") {
		t.Fatalf("newcomer: %s, want busy", r)
	}
	v, _ := redis.String(srv.Do("GET", keys[0]))
	if f := strings.Fields(v); len(f) != 7 || f[0] != "waiter" || f[6] != "s2" {
		t.Fatalf("lock value %q: want the waiter, granted from the queue", v)
	}
}
