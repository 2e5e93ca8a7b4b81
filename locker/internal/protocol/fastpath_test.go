package protocol

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker/driver"
)

// generalOf returns src with its fast paths' guards, conds (the first
// line of each fast path's if), made false: the same script, every call
// taking the general path.
func generalOf(t *testing.T, src string, conds ...string) *driver.Script {
	t.Helper()
	for _, cond := range conds {
		if !strings.Contains(src, cond) {
			t.Fatalf("fast path guard %q not in the script", cond)
		}
		src = strings.Replace(src, cond, "if false and "+strings.TrimPrefix(cond, "if "), 1)
	}
	return driver.NewScript(src)
}

// clock matches what the scripts mint from the server clock (fences in
// µs, grant times and lease ends in ms): runs of ten digits or more.
var clock = regexp.MustCompile(`\d{10,}`)

// eval runs s on srv with keys and args.
func eval(t *testing.T, srv *redistest.Server, s interface{ Source() string }, keys []string, args ...any) any {
	t.Helper()
	a := append([]any{s.Source(), len(keys)}, anys(keys)...)
	v, err := srv.Do("EVAL", append(a, args...)...)
	if err != nil {
		t.Fatalf("EVAL: %v", err)
	}
	return v
}

func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// state dumps keys with the clock's numbers masked, a key's name replaced
// by its suffix after the hash tag (so two lock names compare), and its
// expiry rounded to seconds.
func state(t *testing.T, srv *redistest.Server, keys []string) string {
	t.Helper()
	var b strings.Builder
	for _, k := range keys {
		typ, _ := redis.String(srv.Do("TYPE", k))
		var v any
		switch typ {
		case "string":
			v, _ = redis.String(srv.Do("GET", k))
		case "zset":
			v, _ = redis.Strings(srv.Do("ZRANGE", k, 0, -1, "WITHSCORES"))
		case "hash":
			m, _ := redis.StringMap(srv.Do("HGETALL", k))
			ks := make([]string, 0, len(m))
			for f, x := range m {
				ks = append(ks, f+"="+x)
			}
			slices.Sort(ks)
			v = ks
		}
		pttl, _ := redis.Int64(srv.Do("PTTL", k))
		if pttl > 0 {
			pttl = (pttl + 500) / 1000
		}
		fmt.Fprintf(&b, "%s %s %v ttl %ds\n", k[strings.Index(k, "}"):], typ, v, pttl)
	}
	return clock.ReplaceAllString(b.String(), "#")
}

// reply formats a script reply with the clock's numbers masked.
func reply(v any) string {
	if b, ok := v.([]byte); ok {
		v = string(b)
	}
	if a, ok := v.([]any); ok {
		parts := make([]string, len(a))
		for i, x := range a {
			parts[i] = reply(x)
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	return clock.ReplaceAllString(fmt.Sprint(v), "#")
}

// lockKeys are a lock's keys for name with suffix (see KeyLayout).
func lockKeys(name, suffix string, last bool) []string {
	base := "t:{" + name + "}" + suffix
	keys := []string{base, base + ":q", base + ":w"}
	if last {
		keys = append(keys, "t:{"+name+"}:f")
	}
	return keys
}

// TestFastPathsMatchGeneral: every fast path (a script's uncontended case,
// written out ahead of its shared functions) replies and leaves the keys
// as the general path of the same script does for the same Redis state:
// each case runs once as registered and once with the fast path's guard
// made false, on two lock names prepared alike, and compares.
func TestFastPathsMatchGeneral(t *testing.T) {
	srv := redistest.Start(t)
	published := notices(t, srv)
	const ttl = 10000
	acquire := func(s *driver.Script, extra ...any) func(t *testing.T, keys []string) any {
		return func(t *testing.T, keys []string) any {
			args := append([]any{"tok", ttl, 0, AcquireNew.Arg(), "sid", 250}, extra...)
			return eval(t, srv, s, keys, args...)
		}
	}
	release := func(s *driver.Script, handoff string) func(t *testing.T, keys []string) any {
		return func(t *testing.T, keys []string) any {
			return eval(t, srv, s, keys, "tok", handoff, 250)
		}
	}
	mutexAcquire := Acquire.Source()
	mutexRelease := Release.Source()
	const mutexGuard = "if (a_mode == 'a' or a_mode == 'n') then"
	const acquireGuard = "if a_mode == 'a' and "
	const releaseGuard = "if string.sub(v, 1, i - 1) == a_token .. ' ' and "
	const handOverGuard = "if a_handoff == 'g' and "
	const busyGuard = "if found and a_mode == 'a' and "
	generalRelease := generalOf(t, mutexRelease, releaseGuard, handOverGuard)
	generalBusy := generalOf(t, mutexAcquire, busyGuard)
	// wait is a first try of tok that waits, labelled with label ("": none).
	wait := func(s *driver.Script, label string) func(t *testing.T, keys []string) any {
		return func(t *testing.T, keys []string) any {
			if label == "" {
				return eval(t, srv, s, keys, "tok", ttl, 5000, AcquireNew.Arg(), "sid", 250)
			}
			return eval(t, srv, s, keys, "tok", ttl, 5000, AcquireNew.Arg(), "sid", 250, label)
		}
	}
	// held: other holds the lock (labelled "svc"); with waiting, a waiter
	// "w" whose wait (9 s) outlasts tok's is queued already.
	held := func(waiting bool) func(keys []string) {
		return func(keys []string) {
			eval(t, srv, Acquire, keys, "other", ttl, 0, AcquireNew.Arg(), "s0", 250, "svc")
			if waiting {
				eval(t, srv, Acquire, keys, "w", ttl, 9000, AcquireNew.Arg(), "s1", 250)
			}
		}
	}
	// handOver releases tok's lock, queued for by waiters, as the
	// subscriber near ("": none passed).
	handOver := func(s *driver.Script, near string) func(t *testing.T, keys []string) any {
		return func(t *testing.T, keys []string) any {
			if near == "" {
				return eval(t, srv, s, keys, "tok", HandoffGrant, 250)
			}
			return eval(t, srv, s, keys, "tok", HandoffGrant, 250, near)
		}
	}
	// setField sets field i of the mutex value at keys[0] ("owner fence
	// holds queue granted ends from[ label]") to v, keeping its expiry.
	setField := func(keys []string, i int, v string) {
		old, _ := redis.String(srv.Do("GET", keys[0]))
		f := strings.Fields(old)
		f[i] = v
		_, _ = srv.Do("SET", keys[0], strings.Join(f, " "), "KEEPTTL")
	}
	// queued: tok holds the lock, and a waiter "w" of subscriber s1
	// (label "job 7") is queued for it; with dead, behind an entry whose
	// wait ended ten seconds ago.
	queued := func(dead bool) func(keys []string) {
		return func(keys []string) {
			eval(t, srv, Acquire, keys, "tok", ttl, 0, AcquireNew.Arg(), "sid", 250)
			eval(t, srv, Acquire, keys, "w", 3000, 5000, AcquireNew.Arg(), "s1", 250, "job 7")
			if dead {
				now, _ := redis.Int64s(srv.Do("TIME"))
				_, _ = srv.Do("ZADD", keys[1], (now[0]-20)*1000000, "gone 10000 3000 s2")
			}
		}
	}
	for _, tc := range []struct {
		name          string
		suffix        string
		last          bool                // Redlock's last-token key
		busy          bool                // the reply carries a lease's time left: compared in seconds
		setup         func(keys []string) // the state both runs start from
		fast, general func(t *testing.T, keys []string) any
	}{
		{name: "mutex acquire", fast: acquire(Acquire), general: acquire(generalOf(t, mutexAcquire, mutexGuard))},
		{name: "mutex acquire labelled", fast: acquire(Acquire, "svc"), general: acquire(generalOf(t, mutexAcquire, mutexGuard), "svc")},
		{name: "mutex acquire, busy", busy: true,
			setup: func(keys []string) { eval(t, srv, Acquire, keys, "other", ttl, 0, AcquireNew.Arg(), "sid", 250) },
			fast:  acquire(Acquire), general: acquire(generalOf(t, mutexAcquire, mutexGuard))},
		{name: "mutex acquire, queued", busy: true,
			setup: func(keys []string) { eval(t, srv, Acquire, keys, "other", ttl, 0, AcquireNew.Arg(), "sid", 250) },
			fast: func(t *testing.T, keys []string) any {
				return eval(t, srv, Acquire, keys, "tok", ttl, 5000, AcquireNew.Arg(), "sid", 250)
			},
			general: func(t *testing.T, keys []string) any {
				return eval(t, srv, generalOf(t, mutexAcquire, mutexGuard), keys, "tok", ttl, 5000, AcquireNew.Arg(), "sid", 250)
			}},
		{name: "mutex first try queues", busy: true, setup: held(false),
			fast: wait(Acquire, ""), general: wait(generalBusy, "")},
		{name: "mutex first try queues, labelled", busy: true, setup: held(false),
			fast: wait(Acquire, "job 7"), general: wait(generalBusy, "job 7")},
		{name: "mutex first try queues behind a longer wait", busy: true, setup: held(true),
			fast: wait(Acquire, ""), general: wait(generalBusy, "")},
		{name: "mutex first try queues, queue without expiry", busy: true,
			setup: func(keys []string) {
				held(true)(keys)
				_, _ = srv.Do("PERSIST", keys[1])
			},
			fast: wait(Acquire, ""), general: wait(generalBusy, "")},
		{name: "mutex first try, a lease over kept for its queue",
			setup: func(keys []string) {
				held(true)(keys)
				setField(keys, 5, "1000000000000") // ends, long past
			},
			fast: wait(Acquire, ""), general: wait(generalBusy, "")},
		{name: "mutex first try, a retry of one that took the lock", busy: true,
			setup: func(keys []string) { eval(t, srv, Acquire, keys, "tok", ttl, 0, AcquireNew.Arg(), "sid", 250) },
			fast:  wait(Acquire, ""), general: wait(generalBusy, "")},
		{name: "redlock acquire after a release", last: true,
			setup: func(keys []string) {
				_, _ = srv.Do("SET", keys[3], "old 1234567890123456 1 0 1234567890123 1234567900123 -", "PX", ttl)
			},
			fast: acquire(Acquire), general: acquire(generalOf(t, mutexAcquire, mutexGuard))},
		{name: "redlock waiting acquire after a release", last: true,
			setup: func(keys []string) {
				_, _ = srv.Do("SET", keys[3], "old 1234567890123456 1 0 1234567890123 1234567900123 -", "PX", ttl)
			},
			fast: func(t *testing.T, keys []string) any {
				return eval(t, srv, Acquire, keys, "tok", ttl, 5000, AcquireNotify.Arg(), "sid", 250, "svc")
			},
			general: func(t *testing.T, keys []string) any {
				return eval(t, srv, generalOf(t, mutexAcquire, mutexGuard), keys, "tok", ttl, 5000, AcquireNotify.Arg(), "sid", 250, "svc")
			}},
		{name: "redlock waiting acquire, busy", last: true, busy: true,
			setup: func(keys []string) { eval(t, srv, Acquire, keys, "other", ttl, 0, AcquireNew.Arg(), "sid", 250) },
			fast: func(t *testing.T, keys []string) any {
				return eval(t, srv, Acquire, keys, "tok", ttl, 5000, AcquireNotify.Arg(), "sid", 250)
			},
			general: func(t *testing.T, keys []string) any {
				return eval(t, srv, generalOf(t, mutexAcquire, mutexGuard), keys, "tok", ttl, 5000, AcquireNotify.Arg(), "sid", 250)
			}},
		{name: "mutex release",
			setup: func(keys []string) { eval(t, srv, Acquire, keys, "tok", ttl, 0, AcquireNew.Arg(), "sid", 250) },
			fast:  release(Release, HandoffGrant), general: release(generalRelease, HandoffGrant)},
		{name: "redlock release", last: true,
			setup: func(keys []string) { eval(t, srv, Acquire, keys, "tok", ttl, 0, AcquireNew.Arg(), "sid", 0) },
			fast:  release(Release, HandoffNotify), general: release(generalRelease, HandoffNotify)},
		{name: "mutex hand-over to another subscriber's waiter", setup: queued(false),
			fast: handOver(Release, "sid"), general: handOver(generalRelease, "sid")},
		{name: "mutex hand-over to a waiter of the releaser's subscriber", setup: queued(false),
			fast: handOver(Release, "s1"), general: handOver(generalRelease, "s1")},
		{name: "mutex hand-over, no subscriber passed", setup: queued(false),
			fast: handOver(Release, ""), general: handOver(generalRelease, "")},
		{name: "mutex hand-over past a waiter whose wait is over", setup: queued(true),
			fast: handOver(Release, "sid"), general: handOver(generalRelease, "sid")},
		{name: "mutex hand-over, every waiter's wait over",
			setup: func(keys []string) {
				queued(true)(keys)
				_, _ = srv.Do("ZREM", keys[1], "w 5000 3000 s1 job 7")
			},
			fast: handOver(Release, "sid"), general: handOver(generalRelease, "sid")},
		{name: "mutex release of a nested hold, waiters queued",
			setup: func(keys []string) {
				queued(false)(keys)
				setField(keys, 2, "2") // holds
			},
			fast: handOver(Release, "sid"), general: handOver(generalRelease, "sid")},
		{name: "mutex release of a lease over, kept for its queue",
			setup: func(keys []string) {
				queued(false)(keys)
				setField(keys, 5, "1000000000000") // ends, long past
			},
			fast: handOver(Release, "sid"), general: handOver(generalRelease, "sid")},
		{name: "semaphore acquire", suffix: ":s",
			fast:    acquire(Sem.Acquire.Script, int64(3)),
			general: acquire(generalOf(t, Sem.Acquire.Source(), acquireGuard), int64(3))},
		{name: "semaphore acquire labelled", suffix: ":s",
			fast:    acquire(Sem.Acquire.Script, int64(3), "svc"),
			general: acquire(generalOf(t, Sem.Acquire.Source(), acquireGuard), int64(3), "svc")},
		{name: "read acquire", suffix: ":rw",
			fast:    acquire(RW.Acquire.Script, "r"),
			general: acquire(generalOf(t, RW.Acquire.Source(), acquireGuard), "r")},
		{name: "write acquire", suffix: ":rw",
			fast:    acquire(RW.Acquire.Script, "w"),
			general: acquire(generalOf(t, RW.Acquire.Source(), acquireGuard), "w")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var replies, states, notices [2]string
			for i, run := range []func(*testing.T, []string) any{tc.fast, tc.general} {
				keys := lockKeys(fmt.Sprintf("%s-%d", tc.name, i), tc.suffix, tc.last)
				if tc.setup != nil {
					tc.setup(keys)
				}
				v := run(t, keys)
				if a, ok := v.([]any); ok && tc.busy && len(a) == 5 {
					a[3] = (a[3].(int64) + 500) / 1000 // lease left, in seconds
				}
				replies[i] = reply(v)
				states[i] = state(t, srv, keys)
				notices[i] = published()
			}
			if !sameReply(replies[0], replies[1]) {
				t.Errorf("replies differ:\nfast    %s\ngeneral %s", replies[0], replies[1])
			}
			if states[0] != states[1] {
				t.Errorf("keys differ:\nfast:\n%sgeneral:\n%s", states[0], states[1])
			}
			if notices[0] != notices[1] {
				t.Errorf("notices differ:\nfast    %q\ngeneral %q", notices[0], notices[1])
			}
		})
	}
}

// notices subscribes to every lock channel of the test's lock names and
// returns a function that reports what was published on them since its
// last call, with the clock's numbers masked and the lock names dropped:
// it publishes an end marker and reads up to it.
func notices(t *testing.T, srv *redistest.Server) func() string {
	t.Helper()
	psc := redis.PubSubConn{Conn: srv.Pool(t).Get()}
	t.Cleanup(func() { _ = psc.Close() })
	if err := psc.PSubscribe("t:{*"); err != nil {
		t.Fatal(err)
	}
	if _, ok := psc.Receive().(redis.Subscription); !ok {
		t.Fatal("PSUBSCRIBE not confirmed")
	}
	return func() string {
		t.Helper()
		if _, err := srv.Do("PUBLISH", "t:{end}", "end"); err != nil {
			t.Fatal(err)
		}
		var got []string
		for {
			switch m := psc.ReceiveWithTimeout(5 * time.Second).(type) {
			case redis.Message:
				if m.Channel == "t:{end}" {
					return strings.Join(got, "; ")
				}
				got = append(got, m.Channel[strings.Index(m.Channel, "}"):]+" "+reply(m.Data))
			case error:
				t.Fatalf("reading notices: %v", m)
			}
		}
	}
}

// sameReply compares a fast path's reply, the fence alone, with the
// general path's: {1, fence, 1, ttl, 0} says the same.
func sameReply(fast, general string) bool {
	return fast == general || "[1 "+fast+" 1 "+fmt.Sprint(10000)+" 0]" == general
}

// TestMultiAcquireMatchesAcquire: multi_acquire.lua, ObtainMany's one
// round trip, leaves every lock as one acquire per key does.
func TestMultiAcquireMatchesAcquire(t *testing.T) {
	srv := redistest.Start(t)
	a, b := lockKeys("a", "", false), lockKeys("b", "", false)
	v := eval(t, srv, MultiAcquire, []string{a[0], a[1], b[0], b[1]}, 10000, "tok", "tok", "svc")
	if got := reply(v); got != "[# #]" {
		t.Fatalf("multi_acquire reply %s, want two fences", got)
	}
	c, d := lockKeys("c", "", false), lockKeys("d", "", false)
	for _, keys := range [][]string{c, d} {
		eval(t, srv, Acquire, keys, "tok", 10000, 0, AcquireNew.Arg(), "sid", 250, "svc")
	}
	if multi, one := state(t, srv, append(a, b...)), state(t, srv, append(c, d...)); multi != one {
		t.Errorf("keys differ:\nmulti_acquire:\n%sacquire:\n%s", multi, one)
	}
}

// TestFastPathComparisonFails: the comparison above catches a general
// path that writes anything else (a control run: a label the fast run
// did not pass), and the Redlock fence after a release is exact in both
// runs: one more than the kept token.
func TestFastPathComparisonFails(t *testing.T) {
	srv := redistest.Start(t)
	a, b := lockKeys("a", "", false), lockKeys("b", "", false)
	eval(t, srv, Acquire, a, "tok", 10000, 0, AcquireNew.Arg(), "sid", 250)
	// Acquire without its queuing first try (acquire_busy.lua).
	noBusy := source("mutex_acquire", slices.Concat([]string{luaAcquireFree}, redlockLib, []string{luaAcquire})...)
	eval(t, srv, generalOf(t, noBusy, "if (a_mode == 'a' or a_mode == 'n') then"), b, "tok", 10000, 0, AcquireNew.Arg(), "sid", 250, "svc")
	if state(t, srv, a) == state(t, srv, b) {
		t.Fatal("a labelled and an unlabelled lock compare equal")
	}
	for i, s := range []*driver.Script{Acquire, generalOf(t, noBusy, "if (a_mode == 'a' or a_mode == 'n') then")} {
		keys := lockKeys(fmt.Sprintf("r%d", i), "", true)
		_, _ = srv.Do("SET", keys[3], "old 1234567890123456 1 0 1234567890123 1234567900123 -", "PX", 10000)
		v := eval(t, srv, s, keys, "tok", 10000, 0, AcquireNew.Arg(), "sid", 0)
		if a, ok := v.([]any); ok {
			v = a[1]
		}
		if v != int64(1234567890123457) {
			t.Errorf("run %d: fence %v after a kept token 1234567890123456", i, v)
		}
	}
}
