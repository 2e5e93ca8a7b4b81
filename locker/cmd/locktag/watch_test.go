package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker"
)

// watch reports what notices carry at once, and what only a poll finds:
// a holder there when it started, a lock taken at once, released, or
// lost when its lease ran out.
func TestWatch(t *testing.T) {
	srv := redistest.Start(t)
	args := []string{"--addr", srv.Addr()}
	a, b := sessionFor(t, args...), sessionFor(t, args...)
	ctx := context.Background()
	owner := func(name string) string {
		t.Helper()
		st, err := a.lk.Inspect(ctx, name)
		if err != nil || len(st.Holders) == 0 {
			t.Fatalf("inspect %s: %+v %v", name, st, err)
		}
		return st.Holders[0].Owner
	}
	before, err := a.lk.Obtain(ctx, "w:before", locker.Params{Label: "there first"})
	if err != nil {
		t.Fatal(err)
	}
	out, _ := watching(t, append(args, "watch", "w:", "--interval", "50ms")...)
	jsonOut, _ := watching(t, append(args, "-o", "json", "watch", "w:*", "--interval", "50ms")...)
	waitFor(t, out, " held ", "w:before mutex owner="+owner("w:before"), `label="there first"`)
	line := waitFor(t, jsonOut, `"event":"held"`)
	var e event
	if err := json.Unmarshal([]byte(line), &e); err != nil || e.Name != "w:before" || e.Source != "poll" || e.Kind != "mutex" ||
		e.Fence != before.Token() || e.Label != "there first" || len(e.Owners) != 1 || e.LeaseMs <= 0 {
		t.Errorf("watch -o json: %q: %+v %v", line, e, err)
	}

	// Taken at once, then released: found by the polls.
	le, err := a.lk.Obtain(ctx, "w:quick", locker.Params{})
	if err != nil {
		t.Fatal(err)
	}
	quick := owner("w:quick")
	waitFor(t, out, " acquired ", "w:quick mutex owner="+quick)
	if err := le.Release(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, out, " released ", "w:quick mutex owner="+quick)

	// A fixed lease that runs out: lost.
	if _, err := a.lk.Obtain(ctx, "w:ttl", locker.Params{TTL: 300 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	ttl := owner("w:ttl")
	waitFor(t, out, " acquired ", "w:ttl mutex owner="+ttl)
	waitFor(t, out, " expired ", "w:ttl mutex owner="+ttl)

	// A hand-over to another process's waiter: its grant notice, then the
	// force-release of that holder.
	first, err := a.lk.Obtain(ctx, "w:hand", locker.Params{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, out, " acquired ", "w:hand mutex owner="+owner("w:hand"))
	got := make(chan *locker.Lease, 1)
	go func() {
		le, err := b.lk.Obtain(ctx, "w:hand", locker.Params{Wait: time.Minute})
		if err != nil {
			t.Error(err)
		}
		got <- le
	}()
	testwait.Eventually(t, "the waiter queued", func() bool {
		st, err := a.lk.Inspect(ctx, "w:hand")
		return err == nil && st.Queued == 1
	})
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	second := testwait.Recv(t, got, "the waiter's grant")
	next := owner("w:hand")
	waitFor(t, out, " grant ", "w:hand mutex owner="+next, "lease=")
	line = waitFor(t, jsonOut, `"event":"grant"`)
	if err := json.Unmarshal([]byte(line), &e); err != nil || e.Source != "notice" || e.Fence != second.Token() || e.Name != "w:hand" {
		t.Errorf("watch -o json's grant: %q: %+v %v", line, e, err)
	}
	// A poll has seen the new holder by the time it reports the next
	// lock: it must not report the granted holder as acquired too.
	if _, err := a.lk.Obtain(ctx, "w:marker", locker.Params{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, out, " acquired ", "w:marker")
	testwait.Eventually(t, "the waiter's Locker subscribed to the control channel", func() bool {
		return controlSubscribers(srv) == 2
	})
	if err := a.lk.ForceRelease(ctx, "w:hand", "hung"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, out, " forced ", "w:hand mutex owners="+next, `reason="hung"`)
	<-second.Context().Done()
	if _, err := a.lk.Obtain(ctx, "w:marker2", locker.Params{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, out, " acquired ", "w:marker2")

	// Outside the pattern: nothing.
	if _, err := a.lk.Obtain(ctx, "x:other", locker.Params{}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.lk.Obtain(ctx, "w:marker3", locker.Params{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, out, " acquired ", "w:marker3")
	text := out.String()
	for _, unwanted := range []string{"acquired     w:hand mutex owner=" + next, "released     w:hand mutex owner=" + next, "x:other"} {
		if strings.Contains(text, unwanted) {
			t.Errorf("watch reported %q:\n%s", unwanted, text)
		}
	}
	for line := range strings.SplitSeq(strings.TrimSpace(jsonOut.String()), "\n") {
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Errorf("watch -o json wrote %q: %v", line, err)
		}
	}
}

// watch refuses a user that may not subscribe to the pattern, and says
// what to allow.
func TestWatchRefused(t *testing.T) {
	srv := redistest.Start(t)
	a := sessionFor(t, "--addr", srv.Addr())
	srv.SetUser(t, "svc", "pw", a.lk.ACLRules()...)
	r := locktag(t, "--addr", srv.Addr(), "--user", "svc", "--password", "pw", "watch").want(t, exitRefused)
	if !strings.Contains(r.stderr, "NOPERM") || !strings.Contains(r.stderr, "the user needs +psubscribe and the channel rule &locktag:*") {
		t.Errorf("watch without +psubscribe: %s", r.stderr)
	}
	srv.SetUser(t, "svc", "pw", append(a.lk.ACLRules(), watchRules...)...)
	out, errs := watching(t, "--addr", srv.Addr(), "--user", "svc", "--password", "pw", "watch", "--interval", "50ms")
	if _, err := a.lk.Obtain(context.Background(), "order:1", locker.Params{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, out, "order:1") // held when watch started, or acquired after
	if errs.String() != "" {
		t.Errorf("watch as a user with the rules: %s", errs.String())
	}
}
