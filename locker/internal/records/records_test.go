package records

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker/internal/backend"
	"github.com/locktag/locktag/locker/internal/callctx"
	"github.com/locktag/locktag/locker/internal/lockerr"
	"github.com/locktag/locktag/locker/redigo"
)

// newStore returns the record store on srv under the key prefix "t:",
// its node closed when the test ends.
func newStore(t *testing.T, srv *redistest.Server) *Store {
	t.Helper()
	sh := backend.NewShared(backend.Config{Prefix: "t:", Bounds: callctx.Bounds{Timeout: 2 * time.Second}}, 250*time.Millisecond, false, backend.Hooks{})
	nd := backend.New(redigo.New(srv.Pool(t)), sh)
	t.Cleanup(func() { _ = nd.Close() })
	return New(nd)
}

// view inspects k, failing the test on an error.
func view(t *testing.T, st *Store, k Keys) (View, bool) {
	t.Helper()
	v, ok, err := st.Inspect(context.Background(), k)
	if err != nil {
		t.Fatalf("Inspect: %v", err)
	}
	return v, ok
}

// TestClaimStates walks one record through its states: claimed (in
// flight, owned by the claim's token), in flight to another caller,
// completed and replayed, refused to another fingerprint; and an
// abandoned record claimed again.
func TestClaimStates(t *testing.T) {
	srv := redistest.Start(t)
	st := newStore(t, srv)
	ctx := context.Background()
	k := st.Keys("idem:a")
	if k.Record() != "t:{idem:a}:r" || k.Channel != "t:{idem:a}:rc" {
		t.Fatalf("keys %q, %q", k.Record(), k.Channel)
	}
	fp := Fingerprint("POST /pay {1}")

	before := time.Now()
	r, err := Claim(ctx, st, k, fp, 10*time.Second, 0)
	if err != nil {
		t.Fatalf("first claim: %v", err)
	}
	if r.Replay() || r.Status != Claimed || len(r.Token) != 22 || r.Sent.Before(before) || r.Sent.After(time.Now()) {
		t.Fatalf("first claim %+v, want Claimed with a token, sent during the call", r)
	}
	v, ok := view(t, st, k)
	if !ok || !v.InFlight || v.Owner != r.Token || v.Fingerprint != fp || v.PTTL <= 0 || v.PTTL > 10*time.Second {
		t.Fatalf("claimed record %+v (%v), want in flight, owned by %s, lease in (0, 10s]", v, ok, r.Token)
	}

	if _, err := Claim(ctx, st, k, fp, 10*time.Second, 0); !errors.Is(err, lockerr.ErrInFlight) {
		t.Fatalf("second claim while in flight: %v, want ErrInFlight", err)
	}
	if _, err := Claim(ctx, st, k, Fingerprint("POST /pay {2}"), 10*time.Second, 0); !errors.Is(err, lockerr.ErrMismatch) {
		t.Fatalf("another fingerprint while in flight: %v, want ErrMismatch", err)
	}

	if err := st.End(ctx, k, "not-the-owner", Complete, []byte("x"), time.Minute); !errors.Is(err, lockerr.ErrNotHeld) {
		t.Fatalf("complete by another token: %v, want ErrNotHeld", err)
	}
	if err := st.End(ctx, k, r.Token, Complete, []byte("201 paid"), time.Minute); err != nil {
		t.Fatalf("complete: %v", err)
	}
	if err := st.End(ctx, k, r.Token, Complete, []byte("again"), time.Minute); !errors.Is(err, lockerr.ErrNotHeld) {
		t.Fatalf("complete twice: %v, want ErrNotHeld", err)
	}
	v, ok = view(t, st, k)
	if !ok || v.InFlight || v.Owner != "" || v.PTTL <= 10*time.Second || v.PTTL > time.Minute {
		t.Fatalf("completed record %+v (%v), want done for the TTL of 1m", v, ok)
	}

	r2, err := Claim(ctx, st, k, fp, 10*time.Second, 0)
	if err != nil || !r2.Replay() || string(r2.Outcome) != "201 paid" {
		t.Fatalf("claim of a completed record: %+v %v, want a replay of %q", r2, err, "201 paid")
	}
	if _, err := Claim(ctx, st, k, Fingerprint("POST /pay {2}"), 10*time.Second, 0); !errors.Is(err, lockerr.ErrMismatch) {
		t.Fatalf("another fingerprint once done: %v, want ErrMismatch", err)
	}

	// Abandoned: the record is gone, and the next claim executes.
	k2 := st.Keys("idem:b")
	r3, err := Claim(ctx, st, k2, fp, 10*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.End(ctx, k2, r3.Token, Abandon, nil, time.Minute); err != nil {
		t.Fatalf("abandon: %v", err)
	}
	if _, ok := view(t, st, k2); ok {
		t.Fatal("an abandoned record is still there")
	}
	r4, err := Claim(ctx, st, k2, fp, 10*time.Second, 0)
	if err != nil || r4.Replay() || r4.Token == r3.Token {
		t.Fatalf("claim after abandon: %+v %v, want a new claim with a new token", r4, err)
	}
}

// TestClaimWaitsForTheEnd: a claim that waits is woken when the
// execution in flight ends, long before the lease would have run out:
// it replays a completed record, or claims an abandoned one.
func TestClaimWaitsForTheEnd(t *testing.T) {
	srv := redistest.Start(t)
	st := newStore(t, srv)
	ctx := context.Background()
	fp := Fingerprint("f")
	for _, c := range []struct {
		mode   string
		replay bool
	}{{Complete, true}, {Abandon, false}} {
		k := st.Keys("idem:w" + c.mode)
		// A lease of a minute: only the end's notice wakes the waiter
		// within the test's bounds.
		first, err := Claim(ctx, st, k, fp, time.Minute, 0)
		if err != nil {
			t.Fatal(err)
		}
		type result struct {
			r   Result
			err error
		}
		got := make(chan result, 1)
		go func() {
			r, err := Claim(ctx, st, k, fp, time.Minute, 20*time.Second)
			got <- result{r, err}
		}()
		testwait.Eventually(t, "the second caller registered as waiting", func() bool {
			v, _ := view(t, st, k)
			return v.Waiting == 1
		})
		if err := st.End(ctx, k, first.Token, c.mode, []byte("done once"), time.Minute); err != nil {
			t.Fatal(err)
		}
		// Recv's bound is well within the lease: the notice woke it.
		res := testwait.Recv(t, got, "the waiting claim")
		if res.err != nil {
			t.Fatalf("%s: waiting claim: %v", c.mode, res.err)
		}
		switch {
		case res.r.Replay() != c.replay:
			t.Fatalf("%s: waiting claim %+v, replay %v, want %v", c.mode, res.r, res.r.Replay(), c.replay)
		case c.replay && string(res.r.Outcome) != "done once":
			t.Fatalf("%s: replayed %q", c.mode, res.r.Outcome)
		case !c.replay:
			if v, _ := view(t, st, k); !v.InFlight || v.Owner != res.r.Token {
				t.Fatalf("%s: record %+v, want in flight under the waiter's token", c.mode, v)
			}
		}
	}
}

// TestClaimWaitRunsOut: a wait ends with ErrInFlight when its time is up,
// not before; when ctx ends first, with ctx's error.
func TestClaimWaitRunsOut(t *testing.T) {
	srv := redistest.Start(t)
	st := newStore(t, srv)
	ctx := context.Background()
	k := st.Keys("idem:busy")
	fp := Fingerprint("f")
	if _, err := Claim(ctx, st, k, fp, time.Minute, 0); err != nil {
		t.Fatal(err)
	}
	const wait = 150 * time.Millisecond
	start := time.Now()
	if _, err := Claim(ctx, st, k, fp, time.Minute, wait); !errors.Is(err, lockerr.ErrInFlight) {
		t.Fatalf("wait ran out: %v, want ErrInFlight", err)
	}
	if d := time.Since(start); d < wait {
		t.Fatalf("gave up after %v, before the wait of %v", d, wait)
	}

	cctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := Claim(cctx, st, k, fp, time.Minute, 20*time.Second)
		errc <- err
	}()
	testwait.Eventually(t, "the caller waiting", func() bool {
		v, _ := view(t, st, k)
		return v.Waiting >= 1
	})
	cancel()
	// In the wait the error is ErrInFlight joined with ctx's; in a
	// re-check's call (one follows the subscription), Begin's
	// interruption. Either way it carries ctx's error, not ErrUnavailable.
	if err := testwait.Recv(t, errc, "the cancelled claim"); !errors.Is(err, context.Canceled) || errors.Is(err, lockerr.ErrUnavailable) {
		t.Fatalf("cancelled wait: %v, want context.Canceled, not ErrUnavailable", err)
	}
}

// TestRenew: the owner's renewal resets the in-flight lease; another
// token's is refused and changes nothing.
func TestRenew(t *testing.T) {
	srv := redistest.Start(t)
	st := newStore(t, srv)
	ctx := context.Background()
	k := st.Keys("idem:r")
	r, err := Claim(ctx, st, k, Fingerprint("f"), time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := st.Renew(ctx, k, "another", time.Minute); ok || err != nil {
		t.Fatalf("renewal by another token: %v %v, want refused", ok, err)
	}
	if v, _ := view(t, st, k); v.PTTL > time.Second {
		t.Fatalf("a refused renewal changed the lease to %v", v.PTTL)
	}
	if ok, err := st.Renew(ctx, k, r.Token, time.Minute); !ok || err != nil {
		t.Fatalf("renewal by the owner: %v %v", ok, err)
	}
	if v, _ := view(t, st, k); v.PTTL <= time.Second {
		t.Fatalf("lease %v after the owner's renewal to 1m", v.PTTL)
	}
}

// TestForeignRecordRefused: a record another protocol wrote is refused
// with ErrProtocol (not ErrUnavailable: Redis answered), by a claim and by
// Inspect, and left as it was.
func TestForeignRecordRefused(t *testing.T) {
	srv := redistest.Start(t)
	st := newStore(t, srv)
	k := st.Keys("idem:f")
	if _, err := srv.Do("SET", k.Record(), "@9 future"); err != nil {
		t.Fatal(err)
	}
	_, err := Claim(context.Background(), st, k, Fingerprint("f"), time.Minute, 0)
	if !errors.Is(err, lockerr.ErrProtocol) || errors.Is(err, lockerr.ErrUnavailable) {
		t.Fatalf("claim of a foreign record: %v, want ErrProtocol only", err)
	}
	if _, _, err := st.Inspect(context.Background(), k); lockerr.AsProtocol(err) == nil {
		t.Fatalf("inspect of a foreign record: %v, want the protocol refusal", err)
	}
	if v, _ := redis.String(srv.Do("GET", k.Record())); v != "@9 future" {
		t.Fatalf("the foreign record became %q", v)
	}
}

// TestFailed: a failed call is the caller's interruption when its
// context ended (or its deadline passed), else ErrUnavailable.
func TestFailed(t *testing.T) {
	down := errors.New("connection refused")
	if err := Failed(context.Background(), down); !errors.Is(err, lockerr.ErrUnavailable) || !errors.Is(err, down) {
		t.Errorf("live context: %v, want ErrUnavailable wrapping the failure", err)
	}
	cctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Failed(cctx, down); !errors.Is(err, context.Canceled) || errors.Is(err, lockerr.ErrUnavailable) {
		t.Errorf("cancelled context: %v, want context.Canceled, not ErrUnavailable", err)
	}
	if err := Failed(pastDeadline{context.Background()}, down); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, lockerr.ErrUnavailable) {
		t.Errorf("passed deadline: %v, want DeadlineExceeded, not ErrUnavailable", err)
	}
}

// pastDeadline is a context whose deadline passed before its own timer
// said so (Err is still nil): a driver's network deadline taken from it
// can fire first.
type pastDeadline struct{ context.Context }

func (pastDeadline) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

// TestName: a record name is a hash of route, scope and key whose
// separators user input cannot forge, under the "idem:" head the
// operator's listing recognises.
func TestName(t *testing.T) {
	a := Name("POST /pay", "tenant-1", "key")
	if a != Name("POST /pay", "tenant-1", "key") {
		t.Fatal("Name is not deterministic")
	}
	if !strings.HasPrefix(a, "idem:") || len(a) != len("idem:")+43 {
		t.Fatalf("name %q, want idem: and 43 characters", a)
	}
	for _, o := range [][3]string{
		{"POST /pa", "ytenant-1", "key"},
		{"POST /pay", "tenant-1k", "ey"},
		{"POST /pay", "tenant-2", "key"},
	} {
		if Name(o[0], o[1], o[2]) == a {
			t.Errorf("Name%q equals Name(%q, %q, %q)", o, "POST /pay", "tenant-1", "key")
		}
	}
}
