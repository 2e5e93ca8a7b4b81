package main

import (
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker"
)

// The 3 a.m. case on each deployment: a holder in another process is
// stuck (SIGSTOP) with a waiter queued in a third; the command
// force-releases the lock by the holder's fencing token; the waiter is
// served, and the holder, resumed, finds its context cancelled with the
// reason. watch reports the force-release and the hand-over meanwhile.
func TestStuckLock(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start func(*testing.T) topology
	}{
		{"single", single},
		{"cluster", cluster},
		{"sentinel", sentinel},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name != "single" && testing.Short() {
				t.Skip("starts a Cluster or a Sentinel set-up")
			}
			topo := tc.start(t)
			const name = "report:2026-11"
			holder := startChild(t, "holder", name, 0, topo.args)
			fence := holder.expect(t, "HELD")
			// The holder's Locker subscribes the control channel once it
			// holds a lease; a notice sent before that reaches it only at
			// its next renewal.
			testwait.Eventually(t, "the holder subscribed to the control channel", func() bool {
				n := 0
				for _, m := range topo.masters(t) {
					n += controlSubscribers(m)
				}
				return n >= 1
			})
			waiter := startChild(t, "waiter", name, 0, topo.args)
			var st inspected
			testwait.Eventually(t, "the waiter queued", func() bool {
				r := locktag(t, append(topo.args, "-o", "json", "inspect", name)...).want(t, exitOK)
				r.decode(t, &st)
				return st.Lock != nil && st.Lock.Queued == 1
			})
			if h := st.Lock.Holders; len(h) != 1 || strconv.FormatInt(h[0].Fence, 10) != fence || !strings.HasPrefix(h[0].Label, "test holder pid") {
				t.Fatalf("inspect shows holders %+v, want the holder's fence %s", h, fence)
			}
			owner := st.Lock.Holders[0].Owner
			// ls visits every master: more locks, in other slots.
			other := sessionFor(t, topo.args...)
			want := []string{"report:2026-10", "report:2026-11", "report:2026-12", "report:archive"}
			for _, n := range want {
				if n != name {
					if _, err := other.lk.Obtain(t.Context(), n, locker.Params{}); err != nil {
						t.Fatal(err)
					}
				}
			}
			var l listing
			locktag(t, append(topo.args, "ls", "report:", "-o", "json")...).want(t, exitOK).decode(t, &l)
			var listed []string
			for _, x := range l.Locks {
				listed = append(listed, x.Name)
			}
			if !slices.Equal(listed, want) {
				t.Errorf("ls report: lists %q, want %q", listed, want)
			}
			if r := locktag(t, append(topo.args, "check")...).want(t, exitOK); !strings.HasPrefix(r.stdout, "ok: ") {
				t.Errorf("check: %s", r.stdout)
			}
			events, _ := watching(t, append(topo.args, "watch", "--interval", "100ms", "report:")...)
			waitFor(t, events, "held", name, "owner="+owner)

			holder.signal(t, syscall.SIGSTOP)
			r := locktag(t, append(topo.args, "release", name, "--token", fence, "--reason", "stuck on a dead NFS mount")...).want(t, exitOK)
			if !strings.Contains(r.stdout, "released "+name+": freed owner "+owner+" (fence "+fence) {
				t.Errorf("release says:\n%s", r.stdout)
			}
			if !strings.Contains(r.stderr, "locktag: lock force-released") || !strings.Contains(r.stderr, "(locktag command)") {
				t.Errorf("no audit record with the actor on stderr:\n%s", r.stderr)
			}
			got, _ := strconv.ParseInt(waiter.expect(t, "GOT"), 10, 64)
			if old, _ := strconv.ParseInt(fence, 10, 64); got <= old {
				t.Errorf("the waiter got fence %d, not above the freed holder's %d", got, old)
			}
			waitFor(t, events, "forced", name, "owners="+owner, `reason="stuck on a dead NFS mount"`)
			waitFor(t, events, "grant", name, "fence="+strconv.FormatInt(got, 10))

			holder.signal(t, syscall.SIGCONT)
			if cause := holder.expect(t, "CAUSE"); cause != "true locker: lock lost: force-released: stuck on a dead NFS mount" {
				t.Errorf("the holder's cause: %q", cause)
			}
			if rel := holder.expect(t, "RELEASE"); !strings.Contains(rel, "not held") {
				t.Errorf("the holder's Release after the force-release: %s", rel)
			}
			var now inspected
			locktag(t, append(topo.args, "-o", "json", "inspect", name)...).want(t, exitOK).decode(t, &now)
			if h := now.Lock.Holders; len(h) != 1 || h[0].Fence != got || !strings.HasPrefix(h[0].Label, "test waiter pid") {
				t.Errorf("after the release inspect shows %+v, want the waiter", now.Lock)
			}
			_ = waiter.stdin.Close()
		})
	}
}
