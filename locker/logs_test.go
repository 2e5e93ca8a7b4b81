package locker_test

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
)

// recorder is a slog.Handler that keeps every record.
type recorder struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec.Clone())
	return nil
}
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recorder) WithGroup(string) slog.Handler      { return r }

// only returns the one record with msg, with its attributes as strings.
func (r *recorder) only(t *testing.T, msg string) (slog.Level, map[string]string) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	var found []slog.Record
	for _, rec := range r.recs {
		if rec.Message == msg {
			found = append(found, rec)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d records %q, want 1: %v", len(found), msg, r.recs)
	}
	attrs := map[string]string{}
	found[0].Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
	return found[0].Level, attrs
}

// lostWithin waits (bounded) for le's context to end and checks it was lost.
func lostWithin(t *testing.T, le *locker.Lease, d time.Duration) {
	t.Helper()
	select {
	case <-le.Context().Done():
	case <-time.After(d):
		t.Fatalf("lease not lost within %v", d)
	}
	if !errors.Is(context.Cause(le.Context()), locker.ErrLockLost) {
		t.Fatalf("cause %v, want ErrLockLost", context.Cause(le.Context()))
	}
}

// Every way to lose a lock logs one Error record with its cause, the lock
// name and template, and never the key unless WithKeyAttribute(true).
func TestLogLostCause(t *testing.T) {
	const name, tmpl, key = "POST /orders/{id}/pay", "order:{path.id}", "order:secret-42"
	p := locker.Params{Name: name, Template: tmpl}
	for _, tc := range []struct {
		name    string
		keys    bool
		lease   time.Duration // 0: 400ms
		params  func(locker.Params) locker.Params
		lose    func(t *testing.T, srv *redistest.Server, lk *locker.Locker, le *locker.Lease)
		cause   string
		wantErr bool
	}{{
		name: "key deleted",
		lose: func(t *testing.T, srv *redistest.Server, _ *locker.Locker, _ *locker.Lease) {
			if _, err := srv.Do("DEL", "locktag:{"+key+"}"); err != nil {
				t.Fatal(err)
			}
		},
		cause: "renewal refused: the key was deleted or taken over",
	}, {
		// Restarted without persistence: the key is gone, and the first
		// renewal after the restart is refused. The lease outlasts the
		// restart, so the loss is not the lease running out.
		name: "redis restarted", lease: 10 * time.Second,
		lose:  func(_ *testing.T, srv *redistest.Server, _ *locker.Locker, _ *locker.Lease) { srv.Restart() },
		cause: "renewal refused: the key was deleted or taken over (a DEL, eviction, or a Redis restart without persistence)",
	}, {
		name: "redis down", keys: true,
		lose:  func(_ *testing.T, srv *redistest.Server, _ *locker.Locker, _ *locker.Lease) { srv.Stop() },
		cause: "redis unavailable: renewals failed until the lease ran out", wantErr: true,
	}, {
		name:   "fixed lease overrun",
		params: func(p locker.Params) locker.Params { p.TTL = 100 * time.Millisecond; return p },
		lose:   func(*testing.T, *redistest.Server, *locker.Locker, *locker.Lease) {},
		cause:  "fixed lease overrun: the TTL ran out before Release",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			rec := &recorder{}
			lease := cmp.Or(tc.lease, 400*time.Millisecond)
			lk := newLocker(t, srv, locker.WithLogger(slog.New(rec)), locker.WithKeyAttribute(tc.keys),
				locker.WithWatchdog(lease, 50*time.Millisecond), locker.WithCallTimeout(100*time.Millisecond))
			pp := p
			if tc.params != nil {
				pp = tc.params(p)
			}
			le, err := lk.Obtain(context.Background(), key, pp)
			if err != nil {
				t.Fatal(err)
			}
			tc.lose(t, srv, lk, le)
			lostWithin(t, le, 10*time.Second)
			level, a := rec.only(t, "locktag: lock lost")
			if level != slog.LevelError {
				t.Errorf("level %v", level)
			}
			if !strings.HasPrefix(a["cause"], tc.cause) {
				t.Errorf("cause %q, want %q", a["cause"], tc.cause)
			}
			if (a["error"] != "") != tc.wantErr {
				t.Errorf("error attribute %q, want one: %v", a["error"], tc.wantErr)
			}
			if a["locktag.lock.name"] != name || a["locktag.key.template"] != tmpl || a["locktag.lock.fence"] == "" {
				t.Errorf("attributes %v lack the lock's name, template or fence", a)
			}
			if got, has := a["locktag.key"]; has != tc.keys || (has && got != key) {
				t.Errorf("locktag.key = %q (present %v), want present only with WithKeyAttribute", got, has)
			}
		})
	}
}

// A Release or ReleaseAfter that fails says it was the release, with the
// lock's name.
func TestLogReleaseFailed(t *testing.T) {
	for _, tc := range []struct {
		name    string
		release func(le *locker.Lease) error
	}{
		{"Release", func(le *locker.Lease) error { return le.Release(context.Background()) }},
		{"ReleaseAfter", func(le *locker.Lease) error { return le.ReleaseAfter(context.Background(), time.Minute) }},
	} {
		t.Run(tc.name, func(t *testing.T) { testLogReleaseFailed(t, tc.release) })
	}
}

func testLogReleaseFailed(t *testing.T, release func(le *locker.Lease) error) {
	srv := redistest.Start(t)
	rec := &recorder{}
	lk := newLocker(t, srv, locker.WithLogger(slog.New(rec)), locker.WithCallTimeout(200*time.Millisecond))
	le, err := lk.Obtain(context.Background(), "order:secret-7", locker.Params{Name: "/shop.v1.Shop/Buy"})
	if err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	if err := release(le); !errors.Is(err, locker.ErrUnavailable) {
		t.Fatalf("release = %v, want ErrUnavailable", err)
	}
	level, a := rec.only(t, "locktag: release failed")
	if level != slog.LevelWarn || !strings.HasPrefix(a["cause"], "release failed") || a["error"] == "" {
		t.Errorf("level %v, attributes %v", level, a)
	}
	if a["locktag.lock.name"] != "/shop.v1.Shop/Buy" {
		t.Errorf("lock name %q", a["locktag.lock.name"])
	}
	for k, v := range a {
		if strings.Contains(v, "secret-7") {
			t.Errorf("attribute %s carries the key: %q", k, v)
		}
	}
}

// A lost idempotency claim logs one Error record with its cause and name,
// never the record's key unless WithKeyAttribute(true).
func TestLogClaimLostCause(t *testing.T) {
	const name = "POST /payments"
	record := locker.IdempotencyName(name, "alice", "secret-key-9")
	for _, tc := range []struct {
		name    string
		keys    bool
		lose    func(t *testing.T, srv *redistest.Server)
		cause   string
		wantErr bool
	}{{
		name: "record deleted",
		lose: func(t *testing.T, srv *redistest.Server) {
			if n, err := srv.Do("DEL", "locktag:{"+record+"}:r"); err != nil || n != int64(1) {
				t.Fatalf("DEL the record: %v %v", n, err)
			}
		},
		cause: "renewal refused: the in-flight record was deleted or taken over",
	}, {
		name: "redis down", keys: true,
		lose:  func(_ *testing.T, srv *redistest.Server) { srv.Stop() },
		cause: "redis unavailable: renewals failed until the in-flight lease ran out", wantErr: true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			rec := &recorder{}
			lk := newLocker(t, srv, locker.WithLogger(slog.New(rec)), locker.WithKeyAttribute(tc.keys),
				locker.WithCallTimeout(100*time.Millisecond))
			c, err := lk.Idempotent(context.Background(), record, "fp", locker.IdempotencyParams{Name: name, Lease: 400 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			tc.lose(t, srv)
			select {
			case <-c.Context().Done():
			case <-time.After(10 * time.Second):
				t.Fatal("claim not lost within 10s")
			}
			if !c.Lost() || !errors.Is(context.Cause(c.Context()), locker.ErrLockLost) {
				t.Fatalf("Lost %v, cause %v", c.Lost(), context.Cause(c.Context()))
			}
			level, a := rec.only(t, "locktag: idempotency claim lost")
			if level != slog.LevelError || !strings.HasPrefix(a["cause"], tc.cause) {
				t.Errorf("level %v, cause %q, want Error and %q", level, a["cause"], tc.cause)
			}
			if (a["error"] != "") != tc.wantErr {
				t.Errorf("error attribute %q, want one: %v", a["error"], tc.wantErr)
			}
			if a["locktag.lock.name"] != name || a["held_for"] == "" {
				t.Errorf("attributes %v lack the name or held_for", a)
			}
			if a["locktag.locker.id"] != lk.ID() {
				t.Errorf("locktag.locker.id = %q, want the Locker's ID %q", a["locktag.locker.id"], lk.ID())
			}
			if got, has := a["locktag.key"]; has != tc.keys || (has && got != "locktag:{"+record+"}:r") {
				t.Errorf("locktag.key = %q (present %v), want present only with WithKeyAttribute", got, has)
			}
			// Freeing a lost claim is expected to fail: not a second warning.
			_ = c.Abandon(context.Background())
			rec.mu.Lock()
			defer rec.mu.Unlock()
			for _, r := range rec.recs {
				if r.Message == "locktag: idempotency release failed" && r.Level > slog.LevelDebug {
					t.Errorf("Abandon of the lost claim logged at %v", r.Level)
				}
			}
		})
	}
}

// A Complete or Abandon that fails says it was the idempotency release,
// which one, and the name; never the client's key.
func TestLogClaimEndFailed(t *testing.T) {
	for _, tc := range []struct {
		op  string
		end func(c *locker.Claim) error
	}{
		{"complete", func(c *locker.Claim) error { return c.Complete(context.Background(), []byte("201")) }},
		{"abandon", func(c *locker.Claim) error { return c.Abandon(context.Background()) }},
	} {
		t.Run(tc.op, func(t *testing.T) {
			srv := redistest.Start(t)
			rec := &recorder{}
			lk := newLocker(t, srv, locker.WithLogger(slog.New(rec)), locker.WithCallTimeout(200*time.Millisecond))
			c, err := lk.Idempotent(context.Background(), locker.IdempotencyName("POST /payments", "bob", "secret-key-3"), "fp",
				locker.IdempotencyParams{Name: "POST /payments"})
			if err != nil {
				t.Fatal(err)
			}
			srv.Stop()
			if err := tc.end(c); !errors.Is(err, locker.ErrUnavailable) {
				t.Fatalf("%s = %v, want ErrUnavailable", tc.op, err)
			}
			level, a := rec.only(t, "locktag: idempotency release failed")
			if level != slog.LevelWarn || a["op"] != tc.op || a["error"] == "" || a["cause"] == "" {
				t.Errorf("level %v, attributes %v", level, a)
			}
			if a["locktag.lock.name"] != "POST /payments" {
				t.Errorf("name %q", a["locktag.lock.name"])
			}
			for k, v := range a {
				if strings.Contains(v, "secret-key-3") || strings.Contains(v, "idem:") {
					t.Errorf("attribute %s carries the key or record: %q", k, v)
				}
			}
		})
	}
}
