package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker"
)

// release frees a lock as ForceRelease does, only with a reason, only the
// holder --token names, and says whom it freed and who holds it now.
func TestRelease(t *testing.T) {
	srv := redistest.Start(t)
	args := []string{"--addr", srv.Addr()}
	a, b := sessionFor(t, args...), sessionFor(t, args...)
	ctx := context.Background()
	le, err := a.lk.Obtain(ctx, "job:1", locker.Params{Label: "nightly export"})
	if err != nil {
		t.Fatal(err)
	}
	work := le.Context()
	next := make(chan *locker.Lease, 1)
	go func() {
		le, err := b.lk.Obtain(ctx, "job:1", locker.Params{Wait: time.Minute, Label: "retry"})
		if err != nil {
			t.Error(err)
		}
		next <- le
	}()
	testwait.Eventually(t, "the waiter queued", func() bool {
		st, err := a.lk.Inspect(ctx, "job:1")
		return err == nil && st.Queued == 1
	})
	stillHeld := func() {
		t.Helper()
		if err := work.Err(); err != nil {
			t.Fatalf("the holder's context ended: %v", context.Cause(work))
		}
		st, err := a.lk.Inspect(ctx, "job:1")
		if err != nil || len(st.Holders) != 1 || st.Holders[0].Fence != le.Token() {
			t.Fatalf("the lock changed: %+v %v", st, err)
		}
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"release", "job:1"}, "locktag release: --reason is required"},
		{[]string{"release", "job:1", "--reason", "  "}, "locktag release: --reason is required"},
		{[]string{"release", "--reason", "why"}, "locktag release: missing lock name"},
		{[]string{"release", "job:1", "job:2", "--reason", "why"}, `locktag release: unexpected argument "job:2"`},
	} {
		r := locktag(t, append(args, tc.args...)...).want(t, exitUsage)
		if !strings.HasPrefix(r.stderr, tc.want) || !strings.Contains(r.stderr, "Run 'locktag release --help' for usage.") || r.stdout != "" {
			t.Errorf("%q: %q", tc.args, r.stderr)
		}
	}
	stillHeld()
	r := locktag(t, append(args, "release", "job:1", "--token", "1", "--reason", "why")...).want(t, exitNotFound)
	if !strings.Contains(r.stderr, "not released: no holder has the token 1 (it is held by owner ") || r.stdout != "" {
		t.Errorf("release --token of another holder: %q %q", r.stdout, r.stderr)
	}
	stillHeld()

	st, err := a.lk.Inspect(ctx, "job:1")
	if err != nil {
		t.Fatal(err)
	}
	owner := st.Holders[0].Owner
	var out released
	r = locktag(t, append(args, "release", "job:1", "--token", owner, "--reason", "export hung", "--actor", "alice", "-o", "json")...).want(t, exitOK)
	r.decode(t, &out)
	<-work.Done()
	if cause := context.Cause(work); !errors.Is(cause, locker.ErrForceReleased) || !strings.HasSuffix(cause.Error(), "force-released: export hung") {
		t.Errorf("the holder's cause: %v", cause)
	}
	nle := testwait.Recv(t, next, "the waiter's lease")
	if !out.Released || out.Name != "job:1" || out.Reason != "export hung" || out.Actor != "alice" || out.Token != owner ||
		len(out.Freed) != 1 || out.Freed[0].Owner != owner || out.Freed[0].Fence != le.Token() || out.Freed[0].Label != "nightly export" ||
		out.Now == nil || len(out.Now.Holders) != 1 || out.Now.Holders[0].Fence != nle.Token() || out.Now.Holders[0].Label != "retry" {
		t.Errorf("release -o json: %+v", out)
	}
	if !strings.Contains(r.stderr, `msg="locktag: lock force-released" locktag.key=job:1 reason="export hung" actor=alice`) {
		t.Errorf("no audit record on stderr: %s", r.stderr)
	}

	// Without --token, the waiter that got it; then nothing is held.
	r = locktag(t, append(args, "release", "job:1", "--reason", "again")...).want(t, exitOK)
	if !strings.HasPrefix(r.stdout, "released job:1: freed owner ") || !strings.Contains(r.stdout, `label "retry"); reason "again"`) || !strings.HasSuffix(r.stdout, "now free\n") {
		t.Errorf("release says %q", r.stdout)
	}
	r = locktag(t, append(args, "release", "job:1", "--reason", "again")...).want(t, exitNotFound)
	if r.stderr != "locktag release job:1: nothing was held: nothing changed\n" {
		t.Errorf("release of nothing: %q", r.stderr)
	}
}

// A lock that changes hands between release's check of --token and the
// release: the holder it freed is named, and the status is 5.
func TestReleaseConflict(t *testing.T) {
	srv := redistest.Start(t)
	args := []string{"--addr", srv.Addr()}
	a, b := sessionFor(t, args...), sessionFor(t, args...)
	ctx := context.Background()
	first, err := a.lk.Obtain(ctx, "job:2", locker.Params{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := a.lk.Inspect(ctx, "job:2")
	if err != nil {
		t.Fatal(err)
	}
	var second *locker.Lease
	betweenCheckAndRelease = func() {
		if err := first.Release(ctx); err != nil {
			t.Error(err)
		}
		second, err = b.lk.Obtain(ctx, "job:2", locker.Params{})
		if err != nil {
			t.Error(err)
		}
		// Its Locker subscribes the control channel with its first
		// lease, in the background: the force-release's notice needs it.
		testwait.Eventually(t, "both Lockers subscribed to the control channel", func() bool {
			return controlSubscribers(srv) == 2
		})
	}
	t.Cleanup(func() { betweenCheckAndRelease = func() {} })
	r := locktag(t, append(args, "release", "job:2", "--token", st.Holders[0].Owner, "--reason", "why")...).want(t, exitConflict)
	if !strings.Contains(r.stderr, "CONFLICT: the holder with the token "+st.Holders[0].Owner+" was gone when the release ran; it freed ") {
		t.Errorf("stderr: %s", r.stderr)
	}
	<-second.Context().Done()
	if !errors.Is(context.Cause(second.Context()), locker.ErrForceReleased) {
		t.Errorf("the new holder was not the one freed: %v", context.Cause(second.Context()))
	}
}

// A record of another protocol is refused by name, by every command,
// and left as it is.
func TestForeignProtocol(t *testing.T) {
	srv := redistest.Start(t)
	args := []string{"--addr", srv.Addr()}
	a := sessionFor(t, args...)
	if _, err := a.lk.Obtain(context.Background(), "a:ok", locker.Params{}); err != nil {
		t.Fatal(err)
	}
	const value = "@2 0 written by a later release"
	for _, k := range []string{"locktag:{a:foreign}", "locktag:{a:rate}:rate", "locktag:{a:idem}:r"} {
		if _, err := srv.Do("SET", k, value); err != nil {
			t.Fatal(err)
		}
	}
	const refusal = "locker: record of another protocol: Redis holds a record of protocol 2, this release reads protocol 1"
	r := locktag(t, append(args, "inspect", "a:foreign")...).want(t, exitRefused)
	if !strings.HasPrefix(r.stderr, "locktag inspect a:foreign: refused: "+refusal) ||
		!strings.Contains(r.stderr, "this command speaks protocol 1 and changes nothing it cannot read") {
		t.Errorf("inspect of a foreign record: %s", r.stderr)
	}
	r = locktag(t, append(args, "release", "a:foreign", "--reason", "why")...).want(t, exitRefused)
	if !strings.HasPrefix(r.stderr, "locktag release a:foreign: refused: "+refusal) {
		t.Errorf("release of a foreign record: %s", r.stderr)
	}
	if v, err := redis.String(srv.Do("GET", "locktag:{a:foreign}")); v != value || err != nil {
		t.Errorf("the foreign record after the refused release: %q %v", v, err)
	}
	r = locktag(t, append(args, "inspect", "a:idem")...).want(t, exitRefused)
	if !strings.HasPrefix(r.stderr, "locktag inspect a:idem: refused: "+refusal) {
		t.Errorf("inspect of a foreign idempotency record: %s", r.stderr)
	}
	r = locktag(t, append(args, "ls", "a:")...).want(t, exitRefused)
	if got := rows(r.stdout, "a:", 3); len(got) != 4 || got[0] != "a:ok mutex holder" ||
		!strings.HasPrefix(got[1], "a:foreign mutex locker:") || !strings.HasPrefix(got[2], "a:rate rate locker:") ||
		!strings.HasPrefix(got[3], "a:idem idempotency locker:") {
		t.Errorf("ls with foreign records:\n%s", r.stdout)
	}
	if !strings.Contains(r.stderr, "locktag ls: a:foreign: refused: "+refusal) || !strings.Contains(r.stderr, "locktag ls: a:rate: refused: ") ||
		!strings.Contains(r.stderr, "locktag ls: a:idem: refused: "+refusal) {
		t.Errorf("ls's stderr: %s", r.stderr)
	}
	var l listing
	locktag(t, append(args, "ls", "a:", "-o", "json")...).want(t, exitRefused).decode(t, &l)
	if len(l.Locks) != 1 || len(l.Refused) != 3 || l.Refused[0] != (refusedOut{Name: "a:foreign", Kind: "mutex", Error: l.Refused[0].Error}) ||
		!strings.HasPrefix(l.Refused[0].Error, refusal) || l.Refused[1].Kind != "rate" ||
		l.Refused[2] != (refusedOut{Name: "a:idem", Kind: "idempotency", Error: l.Refused[2].Error}) || !strings.HasPrefix(l.Refused[2].Error, refusal) ||
		len(l.Idempotency) != 0 {
		t.Errorf("ls -o json with foreign records: %+v", l)
	}
	for _, k := range []string{"locktag:{a:foreign}", "locktag:{a:rate}:rate", "locktag:{a:idem}:r"} {
		if v, err := redis.String(srv.Do("GET", k)); v != value || err != nil {
			t.Errorf("%s after the refusals: %q %v", k, v, err)
		}
	}
	_, errs := watching(t, append(args, "watch", "a:")...)
	waitFor(t, errs, "locktag watch: a:foreign: refused: "+refusal)
}
