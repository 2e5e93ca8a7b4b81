package protocol

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
)

// TestQueueEntrySameOnEveryCall: a waiter's queue entry is its details
// ("token wait_ms ttl_ms sid[ label]"), the same on every call that
// passes the same: a re-check keeps its place, a leave with the same
// arguments removes it, and one with another wait (a control: a caller
// that passed what is left of its wait) finds nothing to remove. Inspect
// reads the details back from the entry.
func TestQueueEntrySameOnEveryCall(t *testing.T) {
	srv := redistest.Start(t)
	keys := lockKeys("e", "", false)
	queue := func() []string {
		t.Helper()
		q, err := redis.Strings(srv.Do("ZRANGE", keys[1], 0, -1, "WITHSCORES"))
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	eval(t, srv, Acquire, keys, "holder", 10000, 0, AcquireNew.Arg(), "s0", 250)
	if r := reply(eval(t, srv, Acquire, keys, "w", 3000, 5000, AcquireNew.Arg(), "s1", 250, "job 7")); !strings.HasPrefix(r, "[0 0 0 ") {
		t.Fatalf("waiter: %s, want queued", r)
	}
	first := queue()
	if len(first) != 2 || first[0] != "w 5000 3000 s1 job 7" {
		t.Fatalf("queue %q, want the one entry \"w 5000 3000 s1 job 7\"", first)
	}
	for range 3 {
		eval(t, srv, Acquire, keys, "w", 3000, 5000, AcquireRecheck.Arg(), "s1", 250, "job 7")
	}
	if q := queue(); !slices.Equal(q, first) {
		t.Fatalf("after re-checks the queue is %q, want %q (same entry, same place)", q, first)
	}
	if n, _ := redis.Int(srv.Do("EXISTS", keys[2])); n != 0 {
		t.Fatal("a mutex wrote its third key")
	}

	v, err := redis.Values(srv.Do("EVAL", Inspect.Source(), 9, keys[0], keys[1], keys[2], "x", "x:q", "x:w", "y", "y:q", "y:w", 10))
	if err != nil {
		t.Fatal(err)
	}
	// {s, µs, kind, limit, holders, token, about, left, mode, queued, token, arrival, details, mode}
	arrival, _ := strconv.ParseFloat(first[1], 64)
	want := strconv.FormatInt(int64(arrival)/1000+5000, 10) + " 3000 s1 job 7"
	if got := string(v[12].([]byte)); string(v[10].([]byte)) != "w" || got != want {
		t.Fatalf("inspect: waiter %s with %q, want w with %q", v[10], got, want)
	}

	// Leave with another wait: not this entry.
	eval(t, srv, Leave, keys, "w", LeaveReleaseGrant.Arg(), HandoffGrant, 250, 3000, 4000, "s1", "job 7")
	if q := queue(); !slices.Equal(q, first) {
		t.Fatalf("a leave with another wait changed the queue: %q", q)
	}
	eval(t, srv, Leave, keys, "w", LeaveReleaseGrant.Arg(), HandoffGrant, 250, 3000, 5000, "s1", "job 7")
	if q := queue(); len(q) != 0 {
		t.Fatalf("queue %q after the leave, want empty", q)
	}
}

// TestCutOffDropsEarlierEntries: a grant that lapses drops, at once, every
// entry its Locker queued before the lapse was seen (and tells it "!sid"),
// and no other Locker's: the next live waiter gets the lock, and a
// waiter of the cut Locker that queues again goes to the back.
func TestCutOffDropsEarlierEntries(t *testing.T) {
	srv := redistest.Start(t)
	keys := lockKeys("c", "", false)
	msgs := srv.Messages(t, keys[0]+":c")
	eval(t, srv, Acquire, keys, "holder", 10000, 0, AcquireNew.Arg(), "s0", 50)
	for _, w := range []struct{ token, sid string }{{"a", "s1"}, {"b", "s1"}, {"c", "s2"}, {"d", "s1"}} {
		eval(t, srv, Acquire, keys, w.token, 10000, 60000, AcquireNew.Arg(), w.sid, 50)
	}
	// The release hands the lock to a (s1) for the 50ms window; a never
	// confirms.
	if r := reply(eval(t, srv, Release, keys, "holder", HandoffGrant, 50)); !strings.HasPrefix(r, "[0 a ") {
		t.Fatalf("release: %s, want a hand-over to a", r)
	}
	testwait.Within(t, 5*time.Second, "a's grant lapses", func() bool {
		return reply(eval(t, srv, PTTL, keys[:1], "a")) == "-1"
	})
	// c re-checks: the lapse cuts s1 off (b and d go), c gets the lock.
	if r := reply(eval(t, srv, Acquire, keys, "c", 10000, 60000, AcquireRecheck.Arg(), "s2", 50)); !strings.HasPrefix(r, "[1 ") {
		t.Fatalf("c's re-check: %s, want obtained", r)
	}
	if n, _ := redis.Int(srv.Do("ZCARD", keys[1])); n != 0 {
		q, _ := redis.Strings(srv.Do("ZRANGE", keys[1], 0, -1))
		t.Fatalf("queue %q after the cut-off, want empty", q)
	}
	testwait.Within(t, 5*time.Second, "the cut-off notice", func() bool {
		return slices.Contains(msgs(), "!s1")
	})
	// b, alive, queues again: behind a newer waiter of another Locker.
	eval(t, srv, Acquire, keys, "e", 10000, 60000, AcquireNew.Arg(), "s3", 50)
	eval(t, srv, Acquire, keys, "b", 10000, 60000, AcquireRecheck.Arg(), "s1", 50)
	if q, _ := redis.Strings(srv.Do("ZRANGE", keys[1], 0, -1)); !slices.Equal(q, []string{"e 60000 10000 s3", "b 60000 10000 s1"}) {
		t.Fatalf("queue %q, want e then b", q)
	}
}
