package protocol

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker/driver"
)

// snapshot is every key's serialized value (DUMP) and absolute expiry
// (PEXPIRETIME): equal snapshots are byte-identical keys with the same
// expiry.
func snapshot(t *testing.T, srv *redistest.Server, keys []string) string {
	t.Helper()
	var b strings.Builder
	for _, k := range keys {
		d, err := redis.Bytes(srv.Do("DUMP", k))
		if err != nil && err != redis.ErrNil {
			t.Fatal(err)
		}
		at, err := redis.Int64(srv.Do("PEXPIRETIME", k))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %x %d\n", k, d, at)
	}
	return b.String()
}

// future writes made-up protocol-2 records into keys, as protocol 2 marks
// them (docs/protocol.md): kind "mutex", "sem" (a semaphore's or
// read/write lock's three keys), "idem" or "rate"; queues and the hash
// hold entries of their own; "last" is Redlock's kept value alone,
// "multi" the second of two mutexes. Every key expires in a minute, or never when
// persist.
func future(t *testing.T, srv *redistest.Server, kind string, keys []string, persist bool) {
	t.Helper()
	at := time.Now().Add(time.Minute).UnixMilli()
	str := fmt.Sprintf("@2 %d future-owner 7 anything else", at)
	if persist {
		str = "@2 0 future-owner 7 anything else"
	}
	do := func(args ...any) {
		t.Helper()
		if _, err := srv.Do(args[0].(string), args[1:]...); err != nil {
			t.Fatal(err)
		}
	}
	switch kind {
	case "mutex", "idem", "rate":
		do("SET", keys[0], str)
		if len(keys) > 1 {
			do("ZADD", keys[1], 1, "future-waiter 5000 10000 sid")
			if kind == "idem" {
				do("DEL", keys[1])
				do("SADD", keys[1], "future-waiter")
			}
		}
	case "multi":
		do("SET", keys[2], str) // the second lock of two
	case "last":
		do("SET", keys[3], str) // Redlock's kept value alone
	case "sem":
		do("ZADD", keys[0], 2, "@", at, "future-holder")
		do("ZADD", keys[1], 1, "future-waiter 5000 10000 sid")
		do("HSET", keys[2], "v", "2", "future-holder", "x")
	}
	if !persist {
		for _, k := range keys {
			do("PEXPIREAT", k, at)
		}
	}
}

// TestForeignRecordsRefused: every script that meets a record of another
// protocol replies "LOCKTAG_PROTOCOL 2 1" and leaves every key as it was,
// byte for byte, with its expiry (also a record without one).
func TestForeignRecordsRefused(t *testing.T) {
	srv := redistest.Start(t)
	tok := "AAAAAAAAAAAAAAAAAAAAAA"
	mk := lockKeys("m", "", false)
	ml := lockKeys("ml", "", true)
	sk := lockKeys("s", ":s", false)
	rk := lockKeys("r", ":rw", false)
	ik := []string{"locktag:{idem:x}:r", "locktag:{idem:x}:rw"}
	rate := []string{"locktag:{x}:rate"}
	fp := strings.Repeat("0", 64)
	acq := func(mode string, wait int) []any { return []any{tok, 10000, wait, mode, "sid", 250} }
	leave := []any{tok, LeaveReleaseGrant.Arg(), HandoffGrant, 250, 10000, 5000, "sid"}
	cases := []struct {
		name string
		kind string
		keys []string
		s    *driver.Script
		args []any
	}{
		{"mutex acquire", "mutex", mk, Acquire, acq(AcquireNew.Arg(), 0)},
		{"mutex acquire, waiting", "mutex", mk, Acquire, acq(AcquireNew.Arg(), 5000)},
		{"mutex acquire, labelled", "mutex", mk, Acquire, append(acq(AcquireNew.Arg(), 5000), "a label")},
		{"mutex re-enter", "mutex", mk, Acquire, acq(AcquireReenter.Arg(), 0)},
		{"mutex re-check", "mutex", mk, Acquire, acq(AcquireRecheck.Arg(), 5000)},
		{"redlock acquire", "mutex", ml, Acquire, acq(AcquireNotify.Arg(), 5000)},
		{"redlock acquire, kept token", "last", ml, Acquire, acq(AcquireNew.Arg(), 0)},
		{"redlock acquire, kept token, waiting", "last", ml, Acquire, acq(AcquireNew.Arg(), 5000)},
		{"mutex release", "mutex", mk, Release, []any{tok, HandoffGrant, 250, "sid"}},
		{"redlock release", "mutex", ml, Release, []any{tok, HandoffNotify, 250}},
		{"mutex leave", "mutex", mk, Leave, leave},
		{"mutex extend", "mutex", mk[:1], Extend, []any{tok, 10000}},
		{"mutex pttl", "mutex", mk[:1], PTTL, []any{tok}},
		{"mutex keep", "mutex", mk, Keep, []any{tok, 1000}},
		{"mutex force", "mutex", mk, Force.Script, []any{"locktag:ctl", "test", HandoffGrant, 250}},
		{"redlock raise", "mutex", mk[:1], Raise.Script, []any{tok, 99}},
		{"bridged acquire", "mutex", mk, MutexBridge.Acquire.Script, acq(AcquireNew.Arg(), 5000)},
		{"bridged release", "mutex", mk, MutexBridge.Release.Script, []any{tok, HandoffGrant, 250, "sid"}},
		{"bridged extend", "mutex", mk, MutexBridge.Extend.Script, []any{tok, 10000}},
		{"semaphore acquire", "sem", sk, Sem.Acquire.Script, append(acq(AcquireNew.Arg(), 0), 2)},
		{"semaphore acquire, waiting", "sem", sk, Sem.Acquire.Script, append(acq(AcquireNew.Arg(), 5000), 2)},
		{"semaphore re-enter", "sem", sk, Sem.Acquire.Script, append(acq(AcquireReenter.Arg(), 0), 2)},
		{"semaphore release", "sem", sk, Sem.Release.Script, []any{tok, HandoffGrant, 250, "sid"}},
		{"semaphore leave", "sem", sk, Sem.Leave.Script, leave},
		{"semaphore extend", "sem", sk, semExtend.Script, []any{tok, 10000}},
		{"semaphore pttl", "sem", sk, semPTTL.Script, []any{tok}},
		{"semaphore force", "sem", sk, SemForce.Script, []any{"locktag:ctl", "test", HandoffGrant, 250}},
		{"read acquire", "sem", rk, RW.Acquire.Script, append(acq(AcquireNew.Arg(), 0), "r")},
		{"write acquire, waiting", "sem", rk, RW.Acquire.Script, append(acq(AcquireNew.Arg(), 5000), "w")},
		{"read/write release", "sem", rk, RW.Release.Script, []any{tok, HandoffGrant, 250, "sid"}},
		{"read/write leave", "sem", rk, RW.Leave.Script, leave},
		{"read/write force", "sem", rk, RWForce.Script, []any{"locktag:ctl", "test", HandoffGrant, 250}},
		{"idempotency begin", "idem", ik, IdemBegin.Script, []any{fp, tok, 10000, 5000}},
		{"idempotency end", "idem", ik, IdemEnd.Script, []any{tok, "c", "outcome", 10000, "locktag:{idem:x}:rc"}},
		{"idempotency renew", "idem", ik[:1], IdemRenew.Script, []any{tok, 10000}},
		{"idempotency inspect", "idem", ik, IdemInspect.Script, nil},
		{"multi acquire", "multi", []string{"t:{a}", "t:{a}:q", mk[0], mk[1]}, MultiAcquire.Script, []any{10000, tok, tok}},
		{"rate", "rate", rate, Rate.Script, []any{"100000", 10, 0}},
		{"rate inspect", "rate", rate, RateInspect.Script, nil},
		{"inspect, mutex", "mutex", mk, Inspect.Script, []any{10}},
		{"inspect, semaphore", "sem", sk, Inspect.Script, []any{10}},
	}
	for _, c := range cases {
		for _, persist := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/persist=%v", c.name, persist), func(t *testing.T) {
				if _, err := srv.Do("FLUSHALL"); err != nil {
					t.Fatal(err)
				}
				future(t, srv, c.kind, c.keys, persist)
				keys := c.keys
				if c.s == Inspect.Script {
					all := append(append(lockKeys("x", "", false), lockKeys("x", ":s", false)...), lockKeys("x", ":rw", false)...)
					keys = all
					for i, k := range c.keys {
						off := 0
						if c.kind == "sem" {
							off = 3
						}
						if n, _ := redis.Int(srv.Do("EXISTS", k)); n == 0 {
							continue
						}
						if _, err := srv.Do("RENAME", k, all[off+i]); err != nil {
							t.Fatal(err)
						}
					}
				}
				before := snapshot(t, srv, keys)
				a := append([]any{c.s.Source(), len(keys)}, anys(keys)...)
				v, err := srv.Do("EVAL", append(a, c.args...)...)
				if err == nil || !strings.HasPrefix(err.Error(), "LOCKTAG_PROTOCOL 2 1") {
					t.Fatalf("reply %v, error %v; want the error LOCKTAG_PROTOCOL 2 1", v, err)
				}
				if after := snapshot(t, srv, keys); after != before {
					t.Fatalf("the records changed:\nbefore %s\nafter  %s", before, after)
				}
			})
		}
	}
}

// TestUnreadableRecordsRefused: a value no protocol wrote (another
// program's key under the prefix) is refused as "unknown", not read as a
// lock and not a Lua runtime error.
func TestUnreadableRecordsRefused(t *testing.T) {
	srv := redistest.Start(t)
	tok := "AAAAAAAAAAAAAAAAAAAAAA"
	mk := lockKeys("m", "", false)
	for _, c := range []struct {
		name string
		keys []string
		s    *driver.Script
		args []any
	}{
		{"mutex acquire", mk, Acquire, []any{tok, 10000, 0, AcquireNew.Arg(), "sid", 250}},
		{"mutex extend", mk[:1], Extend, []any{tok, 10000}},
		{"idempotency begin", mk[:2], IdemBegin.Script, []any{strings.Repeat("0", 64), tok, 10000, 0}},
		{"idempotency inspect", mk[:2], IdemInspect.Script, nil},
		{"rate", mk[:1], Rate.Script, []any{"100000", 10, 0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := srv.Do("SET", mk[0], "not a record", "PX", 60000); err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, srv, c.keys)
			a := append([]any{c.s.Source(), len(c.keys)}, anys(c.keys)...)
			_, err := srv.Do("EVAL", append(a, c.args...)...)
			if err == nil || !strings.HasPrefix(err.Error(), "LOCKTAG_PROTOCOL unknown 1") {
				t.Fatalf("error %v, want LOCKTAG_PROTOCOL unknown 1", err)
			}
			if after := snapshot(t, srv, c.keys); after != before {
				t.Fatalf("the record changed:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}
