package guard

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/locktag/locktag/locker/redigo"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/locker"
)

// req is the test adapter's request: values by name.
type req map[string]string

var sources = keyexpr.Sources[req]{
	"v": func(name string) (keyexpr.Getter[req], error) {
		return func(r req) (string, error) {
			if name == "mistake" {
				return "", fmt.Errorf("no such thing: %w", ErrTagMistake)
			}
			return r[name], nil
		}, nil
	},
}

func newLocker(t *testing.T) *locker.Locker {
	t.Helper()
	return lockerOn(t, redistest.Start(t).Pool(t))
}

// lockerOn returns a Locker on pool, closed with the test.
func lockerOn(t *testing.T, pool *redis.Pool, opts ...locker.Option) *locker.Locker {
	t.Helper()
	lk, err := locker.New(redigo.New(pool), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk.Close() })
	return lk
}

// offline returns a Locker whose pool refuses to dial: construction does
// not touch Redis.
func offline(t *testing.T) *locker.Locker {
	t.Helper()
	return lockerOn(t, &redis.Pool{Dial: func() (redis.Conn, error) { return nil, errors.New("never dialled") }})
}

func TestClassify(t *testing.T) {
	te := func(err error) error { return &keyexpr.TemplateError{Placeholder: "{v.x}", Err: err} }
	for _, tc := range []struct {
		err  error
		want Kind
	}{
		{te(keyexpr.ErrMissingValue), BadKey},
		{te(ErrTagMistake), TagMistake},
		{te(fmt.Errorf("body: %w", ErrTooLarge)), TooLarge},
		{locker.ErrNotObtained, Busy},
		{locker.ErrGrantExpired, Busy},
		{fmt.Errorf("%w: dial", locker.ErrUnavailable), Unavailable},
		{locker.ErrPoolExhausted, Unavailable},
		{errors.Join(locker.ErrNotObtained, context.DeadlineExceeded), Deadline},
		{errors.Join(locker.ErrNotObtained, context.Canceled), Canceled},
		{locker.ErrLockLost, Lost},
		{locker.ErrRateLimited, RateLimited},
		{errors.Join(locker.ErrRateLimited, context.Canceled), Canceled},
		{errors.New("other"), Internal},
	} {
		if got := classify(tc.err); got != tc.want {
			t.Errorf("classify(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
	for k := OK; k <= RateLimited; k++ {
		if k.String() == "unknown" || k.Ran() != (k == OK || k == FailedOpen) {
			t.Errorf("kind %d: %q, Ran %v", k, k, k.Ran())
		}
	}
}

// TestOptionErrors: every invalid option is a construction error wrapping
// locker.ErrBadOption, all of them reported together; an option for the other
// kind of guard is one too.
func TestOptionErrors(t *testing.T) {
	lk := offline(t)
	spec := keyexpr.MustParseTag(`key:"k:{v.id}"`)
	for _, tc := range []struct {
		name string
		lock bool
		opts []Option
		want []string
	}{
		{"lock: value cap", true, []Option{WithMaxValueLen(0)}, []string{"WithMaxValueLen"}},
		{"lock: several", true, []Option{WithMaxRequestBytes(0), WithRetryAfter(-1), WithLogger(nil)},
			[]string{"WithMaxRequestBytes", "WithRetryAfter", "WithLogger"}},
		{"lock: idempotency option", true, []Option{WithRecordTTL(time.Hour)}, []string{"WithRecordTTL does not apply"}},
		{"idem: lock option", false, []Option{WithPublicScope(), WithFailOpen()}, []string{"WithFailOpen does not apply"}},
		{"idem: values", false, []Option{WithPublicScope(), WithMaxKeyLen(0), WithRecordTTL(0), WithInFlightLease(time.Millisecond),
			WithReplayWait(-1), WithMaxResponseBytes(-1), WithOversizePolicy(9), WithServerErrorPolicy(9)},
			[]string{"WithMaxKeyLen", "WithRecordTTL", "WithInFlightLease", "WithReplayWait", "WithMaxResponseBytes", "WithOversizePolicy", "WithServerErrorPolicy"}},
		{"idem: scope and public", false, []Option{WithPublicScope(), WithScope(func(req) (string, error) { return "", nil })}, []string{"together"}},
		{"idem: scope of another type", false, []Option{WithScope(func(string) (string, error) { return "", nil })}, []string{"guard.req"}},
		{"idem: nil scope", false, []Option{WithScope[req](nil)}, []string{"nil resolver"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.lock {
				_, err = NewLock(lk, spec, sources, tc.opts...)
			} else {
				_, err = NewIdempotency[req](lk, "T1", tc.opts...)
			}
			if !errors.Is(err, locker.ErrBadOption) {
				t.Fatalf("error %v, want locker.ErrBadOption", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	if _, err := NewIdempotency[req](lk, "T1"); !errors.Is(err, ErrNoScope) {
		t.Errorf("no scope: %v", err)
	}
	if _, err := NewIdempotency[req](lk, "T", WithPublicScope()); !errors.Is(err, locker.ErrBadOption) {
		t.Errorf("bad format: %v", err)
	}
	if _, err := NewLock(nil, spec, sources); !errors.Is(err, ErrNilLocker) {
		t.Errorf("nil locker: %v", err)
	}
}

// TestAdapterOptions: an adapter applies its own options in order and
// skips the guard's; another adapter's option, or one for the other kind of
// guard, is locker.ErrBadOption naming it — and leaves the settings alone.
func TestAdapterOptions(t *testing.T) {
	type mine struct{ n int }
	type theirs struct{ n int }
	set := AdapterOption("mine", "WithN", LockGuards, func(m *mine) error { m.n++; return nil })
	bad := AdapterOption("mine", "WithBad", LockGuards, func(*mine) error { return errors.New("no") })
	foreign := AdapterOption("theirs", "WithN", LockGuards, func(m *theirs) error { m.n++; return nil })
	var m mine
	if err := ApplyAdapterOptions("mine", LockGuards, []Option{set, WithFailOpen(), {}, set}, &m); err != nil || m.n != 2 {
		t.Fatalf("ApplyAdapterOptions: %v, n=%d", err, m.n)
	}
	tests := []struct {
		name string
		t    Target
		opts []Option
		want string
	}{
		{"another adapter's", LockGuards, []Option{foreign}, "locker: bad option: theirs.WithN is an option of theirs, given to mine (Test)"},
		{"wrong guard", IdempotencyGuards, []Option{set}, "locker: bad option: mine.WithN does not apply to this guard"},
		{"bad value", LockGuards, []Option{bad}, "locker: bad option: mine.WithBad: no"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m mine
			err := ApplyAdapterOptions("mine (Test)", tt.t, tt.opts, &m)
			if !errors.Is(err, locker.ErrBadOption) || err.Error() != tt.want {
				t.Fatalf("err = %v, want locker.ErrBadOption: %q", err, tt.want)
			}
			if m.n != 0 {
				t.Fatalf("a refused option changed the settings: n=%d", m.n)
			}
		})
	}
	// Guards ignore adapter options.
	if _, err := NewLock(offline(t), keyexpr.MustParseTag(`key:"a"`), sources, set); err != nil {
		t.Fatal(err)
	}
}

// TestLockRun: one table of requests through a real Redis.
func TestLockRun(t *testing.T) {
	lk := newLocker(t)
	var logged bytes.Buffer
	g, err := CompileLock(lk, `key:"k:{v.id}" wait:"1500ms"`, sources, WithLogger(slog.New(slog.NewTextHandler(&logged, nil))))
	if err != nil {
		t.Fatal(err)
	}
	mistake, err := CompileLock(lk, `key:"k:{v.mistake}"`, sources, WithLogger(slog.New(slog.NewTextHandler(&logged, nil))))
	if err != nil {
		t.Fatal(err)
	}
	held, err := lk.Obtain(t.Context(), "k:busy", locker.Params{})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(t.Context())
	short, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	failing := errors.New("handler failed")
	for _, tc := range []struct {
		name  string
		g     *Lock[req]
		ctx   context.Context
		r     req
		err   error // the call's
		want  Kind
		ran   bool
		retry time.Duration
	}{
		{"ok", g, t.Context(), req{"id": "1"}, nil, OK, true, 0},
		{"call error, lock kept", g, t.Context(), req{"id": "1"}, failing, OK, true, 0},
		{"missing value", g, t.Context(), req{}, nil, BadKey, false, 0},
		{"tag mistake", mistake, t.Context(), req{}, nil, TagMistake, false, 0},
		{"deadline while waiting", g, short, req{"id": "busy"}, nil, Deadline, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ran := false
			o := tc.g.Run(tc.ctx, tc.r, "test", func(ctx context.Context) error {
				ran = locker.FromContext(ctx) != nil
				return tc.err
			})
			if o.Kind != tc.want || ran != tc.ran || o.RetryAfter != tc.retry || o.Name != "test" {
				t.Fatalf("outcome %+v, ran %v; want %v, ran %v", o, ran, tc.want, tc.ran)
			}
		})
	}
	if s := logged.String(); !strings.Contains(s, `tag="key:\"k:{v.mistake}\""`) || !strings.Contains(s, "name=test") {
		t.Fatalf("the tag mistake's log line names neither the tag nor the guard: %s", s)
	}
	busy, err := CompileLock(lk, `key:"k:{v.id}"`, sources)
	if err != nil {
		t.Fatal(err)
	}
	if o := busy.Run(t.Context(), req{"id": "busy"}, "", nil); o.Kind != Busy || o.RetryAfter != time.Second {
		t.Fatalf("busy: %+v", o)
	}
	if o := g.Run(t.Context(), req{"id": "busy"}, "", nil); o.Kind != Busy || o.RetryAfter != 2*time.Second {
		t.Fatalf("busy after the wait: %+v", o)
	}
}

// TestLockReleasedOnPanic: the lock is released when the call panics, and
// the panic goes on.
func TestLockReleasedOnPanic(t *testing.T) {
	lk := newLocker(t)
	g, err := CompileLock(lk, `key:"p:{v.id}"`, sources)
	if err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if recover() != "boom" {
				t.Fatal("the panic did not go on")
			}
		}()
		g.Run(t.Context(), req{"id": "1"}, "", func(context.Context) error { panic("boom") })
	}()
	if o := g.Run(t.Context(), req{"id": "1"}, "", func(context.Context) error { return nil }); o.Kind != OK {
		t.Fatalf("after the panic: %+v", o)
	}
}

// TestFailOpen: Redis unreachable; the fail-open guard runs the call and
// says why, the default one refuses.
func TestFailOpen(t *testing.T) {
	srv := redistest.Start(t)
	lk := lockerOn(t, srv.Pool(t), locker.WithCallTimeout(300*time.Millisecond))
	srv.Stop()
	open, err := CompileLock(lk, `key:"f:{v.id}"`, sources, WithFailOpen())
	if err != nil {
		t.Fatal(err)
	}
	var cause error
	o := open.Run(t.Context(), req{"id": "1"}, "", func(ctx context.Context) error { cause = FailOpenCause(ctx); return nil })
	if o.Kind != FailedOpen || !errors.Is(cause, locker.ErrUnavailable) {
		t.Fatalf("fail-open: %+v, cause %v", o, cause)
	}
	closed, _ := CompileLock(lk, `key:"f:{v.id}"`, sources)
	if o := closed.Run(t.Context(), req{"id": "1"}, "", nil); o.Kind != Unavailable || o.RetryAfter != time.Second {
		t.Fatalf("fail-closed: %+v", o)
	}
}

func TestRecord(t *testing.T) {
	for _, tc := range []struct {
		status    int
		payload   string
		notStored bool
	}{{200, "hello", false}, {0, "", false}, {503, "", true}, {201, strings.Repeat("x", 300), false}} {
		b := encodeRecord("T1", tc.status, []byte(tc.payload), tc.notStored)
		r, ns, err := decodeRecord("T1", b)
		if err != nil || r.Status != tc.status || string(r.Payload) != map[bool]string{false: tc.payload, true: ""}[tc.notStored] || ns != tc.notStored {
			t.Errorf("%+v: %+v %v %v", tc, r, ns, err)
		}
	}
	for _, bad := range []string{"", "T", "T1", "X1\x00\x01", "T1\x00\xff\xff\xff\xff\xff"} {
		if _, _, err := decodeRecord("T1", []byte(bad)); !errors.Is(err, ErrUnreadableRecord) {
			t.Errorf("decode %q: %v", bad, err)
		}
	}
	// Length prefixes keep parts apart.
	if fingerprint([]string{"a", "bc"}, nil) == fingerprint([]string{"ab", "c"}, nil) {
		t.Error("fingerprint collision")
	}
}
