package admin

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker/internal/backend"
	"github.com/locktag/locktag/locker/internal/callctx"
	"github.com/locktag/locktag/locker/internal/lockerr"
	"github.com/locktag/locktag/locker/internal/protocol"
	"github.com/locktag/locktag/locker/internal/quorum"
	"github.com/locktag/locktag/locker/internal/single"
	"github.com/locktag/locktag/locker/internal/tally"
	"github.com/locktag/locktag/locker/redigo"
)

const (
	prefix  = "t:"
	control = "t:control" // the control channel force-release notices go to
	timeout = 2 * time.Second
)

var allKinds = []string{kindMutex, kindSemaphore, kindRW}

// deployment is a backend's Admin over real servers with the Shared it
// was made with.
type deployment struct {
	ad    backend.Admin
	sh    *backend.Shared
	nodes []*backend.Node
}

func newShared(lastKey bool) *backend.Shared {
	return backend.NewShared(backend.Config{Prefix: prefix, Bounds: callctx.Bounds{Timeout: timeout}}, 250*time.Millisecond, lastKey, backend.Hooks{})
}

// oneDeployment is the single backend on srv.
func oneDeployment(t *testing.T, srv *redistest.Server) *deployment {
	t.Helper()
	sh := newShared(false)
	nd := backend.New(redigo.New(srv.Pool(t)), sh)
	t.Cleanup(func() { _ = nd.Close() })
	return &deployment{ad: single.New(sh, nd, true), sh: sh, nodes: []*backend.Node{nd}}
}

// redlock is the quorum backend over srvs, one master each.
func redlock(t *testing.T, srvs []*redistest.Server) *deployment {
	t.Helper()
	sh := newShared(true)
	var nodes []*backend.Node
	for _, s := range srvs {
		nd := backend.New(redigo.New(s.Pool(t)), sh)
		t.Cleanup(func() { _ = nd.Close() })
		nodes = append(nodes, nd)
	}
	return &deployment{ad: quorum.New(sh, nodes), sh: sh, nodes: nodes}
}

// take runs a holder's first acquire of n (with its FirstArgs) on the
// given nodes (all when none are named) and fails the test unless each
// reply is want (scripts' status: 1 obtained, 0 busy).
func (d *deployment) take(t *testing.T, n protocol.Names, want int64, on ...int) {
	t.Helper()
	if on == nil {
		for i := range d.nodes {
			on = append(on, i)
		}
	}
	for _, i := range on {
		v, err := d.nodes[i].Drv.Eval(context.Background(), n.Scripts.Acquire.Script, n.Keys, n.FirstArgs...)
		if err != nil {
			t.Fatalf("acquire on node %d: %v", i, err)
		}
		status, ok := v.(int64) // a free lock's fast reply is its fence alone
		if ok {
			status = 1
		} else if a, _ := v.([]any); len(a) > 0 {
			status, _ = a[0].(int64)
		}
		if status != want {
			t.Fatalf("acquire on node %d: reply %v, want status %d", i, v, want)
		}
	}
}

// holder returns a new holder's names of key: a mutex (limit 0, write
// false), a semaphore (limit > 0) or a read/write hold (rw), with
// Obtain's first-try arguments for ttl, wait and label.
func (d *deployment) holder(key string, limit int, rw, write bool, ttl, wait time.Duration, label string) (protocol.Names, string) {
	buf := new(protocol.Buf)
	var n protocol.Names
	var token string
	switch {
	case limit > 0:
		n, token = d.sh.Layout.Semaphore(key, limit, buf)
	case rw:
		n, token = d.sh.Layout.RW(key, write, buf)
	default:
		n, token = d.sh.Layout.Mutex(key, buf)
	}
	if label != "" {
		n.LabelArg = label
	}
	return n.WithFirstArgs(buf, d.sh.MSArg(ttl), d.sh.MSArg(wait), d.sh.SIDArg, d.sh.WindowArg), token
}

func (d *deployment) inspect(t *testing.T, name string) *View {
	t.Helper()
	v, err := Inspect(context.Background(), d.ad, &d.sh.Layout, name, timeout)
	if err != nil {
		t.Fatalf("Inspect %s: %v", name, err)
	}
	return v
}

// TestInspectMutex: Inspect reads a mutex's holder (token, fence, holds,
// lease left, label) and its queued waiters, and a free name as nothing.
func TestInspectMutex(t *testing.T) {
	srv := redistest.Start(t)
	d := oneDeployment(t, srv)
	hn, htoken := d.holder("k", 0, false, false, time.Minute, 0, "job 7")
	d.take(t, hn, 1)
	wn, wtoken := d.holder("k", 0, false, false, 30*time.Second, 20*time.Second, "")
	d.take(t, wn, 0)

	v := d.inspect(t, "k")
	if v.Name != "k" || v.Kind != kindMutex || v.Holder == nil || len(v.Holders) != 1 {
		t.Fatalf("view %+v, want a mutex with one holder", v)
	}
	h := v.Holder
	if h.Owner != htoken || h.Fence <= 0 || h.Holds != 1 || h.Label != "job 7" || h.LeaseLeft <= 0 || h.LeaseLeft > time.Minute || h.Held < 0 {
		t.Fatalf("holder %+v, want %s with a fence, 1 hold, label \"job 7\", lease in (0, 1m]", h, htoken)
	}
	if v.Queued != 1 || len(v.Waiters) != 1 {
		t.Fatalf("waiters %+v (queued %d), want one", v.Waiters, v.Queued)
	}
	if w := v.Waiters[0]; w.Owner != wtoken || w.WaitLeft <= 0 || w.WaitLeft > 20*time.Second || w.Waited < 0 {
		t.Fatalf("waiter %+v, want %s with its wait left in (0, 20s]", w, wtoken)
	}

	if free := d.inspect(t, "free"); free.Kind != "" || free.Holder != nil || len(free.Holders) != 0 || len(free.Waiters) != 0 || free.Queued != 0 {
		t.Fatalf("a free name: %+v, want nothing", free)
	}
}

// TestInspectKinds: a semaphore shows its limit and every holder (no one
// Holder); a read/write lock its readers, or its writer as the Holder.
func TestInspectKinds(t *testing.T) {
	srv := redistest.Start(t)
	d := oneDeployment(t, srv)
	var sem []string
	for range 2 {
		n, token := d.holder("s", 3, false, false, time.Minute, 0, "")
		d.take(t, n, 1)
		sem = append(sem, token)
	}
	v := d.inspect(t, "s")
	if v.Kind != kindSemaphore || v.Limit != 3 || v.Holder != nil || len(v.Holders) != 2 {
		t.Fatalf("semaphore %+v, want limit 3, two holders, no single holder", v)
	}
	for _, h := range v.Holders {
		if !slices.Contains(sem, h.Owner) {
			t.Fatalf("semaphore holder %q is none of %q", h.Owner, sem)
		}
	}

	for range 2 {
		n, _ := d.holder("r", 0, true, false, time.Minute, 0, "")
		d.take(t, n, 1)
	}
	v = d.inspect(t, "r")
	if v.Kind != kindRW || v.Holder != nil || len(v.Holders) != 2 || v.Holders[0].Mode != "read" || v.Holders[1].Mode != "read" {
		t.Fatalf("read/write lock with two readers: %+v", v)
	}
	wn, wtoken := d.holder("w", 0, true, true, time.Minute, 0, "")
	d.take(t, wn, 1)
	v = d.inspect(t, "w")
	if v.Kind != kindRW || v.Holder == nil || v.Holder.Owner != wtoken || v.Holder.Mode != "write" {
		t.Fatalf("read/write lock with a writer: %+v, want the writer %s as its holder", v, wtoken)
	}
}

// TestForceRelease: a force-release frees every holder of the name,
// whatever its kind, reports each, publishes the owners and the reason
// on the control channel, and hands a mutex to the head of its queue —
// a local waiter is woken at once; a free name frees nothing.
func TestForceRelease(t *testing.T) {
	srv := redistest.Start(t)
	d := oneDeployment(t, srv)
	ctx := context.Background()
	msgs := srv.Messages(t, control)
	hn, htoken := d.holder("k", 0, false, false, time.Minute, 0, "")
	d.take(t, hn, 1)
	wn, wtoken := d.holder("k", 0, false, false, 30*time.Second, 20*time.Second, "")
	d.take(t, wn, 0)
	w := d.nodes[0].Hub.Register(wtoken)
	defer d.nodes[0].Hub.Unregister(w)
	before := d.inspect(t, "k")

	freed, err := Force(ctx, d.ad, &d.sh.Layout, allKinds, "k", control, "stuck", timeout)
	if err != nil {
		t.Fatalf("force-release: %v", err)
	}
	if len(freed) != 1 || freed[0].Kind != kindMutex || freed[0].Owner != htoken || freed[0].Fence != before.Holder.Fence || freed[0].Holds != 1 {
		t.Fatalf("freed %+v, want the mutex's holder %s with its fence %d", freed, htoken, before.Holder.Fence)
	}
	testwait.Eventually(t, "the control notice", func() bool { return slices.Contains(msgs(), htoken+" stuck") })
	g := testwait.Recv(t, w.Grant, "the local waiter's grant")
	if g.Fence <= before.Holder.Fence || g.PTTL <= 0 {
		t.Fatalf("waiter's grant %+v, want a larger fence than %d and a lease", g, before.Holder.Fence)
	}
	if v := d.inspect(t, "k"); v.Holder == nil || v.Holder.Owner != wtoken || v.Queued != 0 {
		t.Fatalf("after the force-release: %+v, want the waiter %s holding, nobody queued", v, wtoken)
	}

	// A semaphore: every permit freed.
	var sem []string
	for range 2 {
		n, token := d.holder("s", 2, false, false, time.Minute, 0, "")
		d.take(t, n, 1)
		sem = append(sem, token)
	}
	freed, err = Force(ctx, d.ad, &d.sh.Layout, allKinds, "s", control, "stuck", timeout)
	if err != nil || len(freed) != 2 || freed[0].Kind != kindSemaphore || !slices.Contains(sem, freed[0].Owner) || !slices.Contains(sem, freed[1].Owner) {
		t.Fatalf("semaphore force-release: %+v %v, want both permits' holders %q", freed, err, sem)
	}
	if v := d.inspect(t, "s"); len(v.Holders) != 0 {
		t.Fatalf("semaphore still held by %+v", v.Holders)
	}

	if freed, err := Force(ctx, d.ad, &d.sh.Layout, allKinds, "free", control, "stuck", timeout); err != nil || len(freed) != 0 {
		t.Fatalf("force-release of a free name: %+v %v, want nothing freed", freed, err)
	}
}

// TestRedlockMajority: on Redlock, Inspect shows the holder a majority
// of masters agree on and not one a minority holds; a force-release frees
// a majority's holder, and frees a minority's remnants with ErrNotHeld.
func TestRedlockMajority(t *testing.T) {
	srvs := redistest.StartN(t, 3)
	d := redlock(t, srvs)
	ctx := context.Background()
	an, atoken := d.holder("maj", 0, false, false, time.Minute, 0, "")
	d.take(t, an, 1, 0, 1)
	bn, _ := d.holder("min", 0, false, false, time.Minute, 0, "")
	d.take(t, bn, 1, 2)

	if v := d.inspect(t, "maj"); v.Kind != kindMutex || v.Holder == nil || v.Holder.Owner != atoken {
		t.Fatalf("majority's lock: %+v, want held by %s", v, atoken)
	}
	if v := d.inspect(t, "min"); v.Kind != "" || v.Holder != nil {
		t.Fatalf("a minority's lock: %+v, want not a lock", v)
	}

	freed, err := Force(ctx, d.ad, &d.sh.Layout, []string{kindMutex}, "maj", control, "stuck", timeout)
	if err != nil || len(freed) != 1 || freed[0].Owner != atoken {
		t.Fatalf("majority's force-release: %+v %v, want %s freed", freed, err, atoken)
	}
	freed, err = Force(ctx, d.ad, &d.sh.Layout, []string{kindMutex}, "min", control, "stuck", timeout)
	if !errors.Is(err, lockerr.ErrNotHeld) || len(freed) != 1 {
		t.Fatalf("minority's force-release: %+v %v, want its remnant freed and ErrNotHeld", freed, err)
	}
	for i, s := range srvs {
		for _, key := range []string{"t:{maj}", "t:{min}"} {
			if n, _ := redis.Int(s.Do("EXISTS", key)); n != 0 {
				t.Fatalf("%s left on master %d", key, i)
			}
		}
	}
}

// TestFailures: when too few nodes answer, Inspect and a force-release
// fail: one deployment's error matches ErrUnavailable, Redlock's is the
// undecided tally's *tally.Error naming the operation.
func TestFailures(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	one := oneDeployment(t, srv)
	srv.Stop()
	if _, err := Inspect(ctx, one.ad, &one.sh.Layout, "k", timeout); !errors.Is(err, lockerr.ErrUnavailable) || errors.Is(err, lockerr.ErrQuorum) {
		t.Errorf("one deployment down, inspect: %v, want ErrUnavailable only", err)
	}

	srvs := redistest.StartN(t, 3)
	d := redlock(t, srvs)
	srvs[0].Stop()
	srvs[2].Stop()
	for _, c := range []struct {
		op   string
		call func() error
	}{
		{"inspect", func() error { _, err := Inspect(ctx, d.ad, &d.sh.Layout, "k", timeout); return err }},
		{"force-release", func() error {
			_, err := Force(ctx, d.ad, &d.sh.Layout, []string{kindMutex}, "k", control, "stuck", timeout)
			return err
		}},
	} {
		err := c.call()
		var te *tally.Error
		if !errors.As(err, &te) || te.Op != c.op || te.Need != 2 || !errors.Is(err, lockerr.ErrQuorum) {
			t.Errorf("two of three masters down, %s: %T %v, want the tally's error for %q", c.op, err, err, c.op)
		}
	}
}

// TestList: List pages through the lock names under a prefix, each once
// whatever its kinds, and nothing else stored beside them; ListStored
// names what each is; a cursor List did not make is refused.
func TestList(t *testing.T) {
	srv := redistest.Start(t)
	d := oneDeployment(t, srv)
	ctx := context.Background()
	for _, h := range []struct {
		key   string
		limit int
		rw    bool
	}{{"a1", 0, false}, {"a2", 2, false}, {"a3", 0, true}, {"b1", 0, false}, {"a*", 0, false}} {
		n, _ := d.holder(h.key, h.limit, h.rw, false, time.Minute, 0, "")
		d.take(t, n, 1)
	}
	// Two kinds on one name, a waiter's queue, an idempotency record and
	// a rate key: none is a second lock.
	n, _ := d.holder("a1", 2, false, false, time.Minute, 0, "")
	d.take(t, n, 1)
	if _, err := srv.Do("SET", "t:{idem:x}:r", "p0"); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Do("SET", "t:{a1}:rate", "1"); err != nil {
		t.Fatal(err)
	}
	bounds := callctx.Bounds{Timeout: timeout}
	all := func(p string) []string {
		var got []string
		for cursor := ""; ; {
			page, next, err := List(ctx, d.ad, bounds, prefix, p, cursor)
			if err != nil {
				t.Fatalf("List %q: %v", p, err)
			}
			got = append(got, page...)
			if next == "" {
				break
			}
			cursor = next
		}
		slices.Sort(got)
		return slices.Compact(got)
	}
	if got := all("a"); !slices.Equal(got, []string{"a*", "a1", "a2", "a3"}) {
		t.Fatalf("List a: %q", got)
	}
	if got := all("a*"); !slices.Equal(got, []string{"a*"}) {
		t.Fatalf("List of a literal \"a*\": %q", got)
	}
	if _, _, err := List(ctx, d.ad, bounds, prefix, "", "not a cursor"); !errors.Is(err, lockerr.ErrBadOption) {
		t.Fatalf("a made-up cursor: %v, want ErrBadOption", err)
	}

	stored, _, err := ListStored(ctx, d.ad, bounds, prefix, "", "")
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, s := range stored {
		kinds = append(kinds, s.Name+" "+s.Kind)
	}
	slices.Sort(kinds)
	want := []string{"a* mutex", "a1 mutex", "a1 rate", "a1 semaphore", "a2 semaphore", "a3 read/write", "b1 mutex", "idem:x idempotency"}
	if !slices.Equal(kinds, want) {
		t.Fatalf("ListStored:\n got %q\nwant %q", kinds, want)
	}
}

// TestReadNotice: each message the scripts publish reads as its event;
// anything else is not a notice.
func TestReadNotice(t *testing.T) {
	for _, c := range []struct {
		channel, payload string
		want             string // "event name kind owners" or "" for none
	}{
		{control, "tokA,tokB stuck job", "forced   tokA,tokB"},
		{"t:{k}:c", "tokA 7 1700000000000 500", "grant k mutex tokA"},
		{"t:{k}:s:c", "tokA 7 1700000000000 500", "grant k semaphore tokA"},
		{"t:{k}:rw:c", "-", "free k read/write "},
		{"t:{k}:c", "!sid-1", "dropped k mutex "},
		{"t:{idem:x}:rc", "tokA 0 0", "record-ended idem:x idempotency tokA"},
		{"t:{idem:x}:rc", "-", ""},
		{"t:{k}:c", "tokA seven 1", ""},
		{"other:{k}:c", "-", ""},
		{"t:{k}:q", "-", ""},
		{control, "no-reason", ""},
	} {
		n, ok := ReadNotice(prefix, control, c.channel, c.payload)
		got := ""
		if ok {
			got = n.Event + " " + n.Name + " " + n.Kind + " " + strings.Join(n.Owners, ",")
		}
		if got != c.want {
			t.Errorf("ReadNotice(%q, %q) = %q, want %q", c.channel, c.payload, got, c.want)
		}
	}
	n, _ := ReadNotice(prefix, control, "t:{k}:c", "tokA 7 1700000000000 500")
	if n.Fence != 7 || n.Lease != 500*time.Millisecond || !n.Server.Equal(time.UnixMilli(1700000000000)) {
		t.Fatalf("grant notice %+v, want fence 7, lease 500ms, its server time", n)
	}
}
