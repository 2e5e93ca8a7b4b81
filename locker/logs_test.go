package locker_test

import (
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
			lk := newLocker(t, srv, locker.WithLogger(slog.New(rec)), locker.WithKeyAttribute(tc.keys),
				locker.WithWatchdog(400*time.Millisecond, 50*time.Millisecond), locker.WithCallTimeout(100*time.Millisecond))
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

// A Release that fails says it was the release, with the lock's name.
func TestLogReleaseFailed(t *testing.T) {
	srv := redistest.Start(t)
	rec := &recorder{}
	lk := newLocker(t, srv, locker.WithLogger(slog.New(rec)), locker.WithCallTimeout(200*time.Millisecond))
	le, err := lk.Obtain(context.Background(), "order:secret-7", locker.Params{Name: "/shop.v1.Shop/Buy"})
	if err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	if err := le.Release(context.Background()); !errors.Is(err, locker.ErrUnavailable) {
		t.Fatalf("Release = %v, want ErrUnavailable", err)
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
