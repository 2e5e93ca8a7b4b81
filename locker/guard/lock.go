package guard

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/locker"
)

// Lock is one compiled lock tag bound to an adapter's request type R. It is
// safe for concurrent use; build it once, at registration. Its only state
// is what it has logged (see WithLogger).
type Lock[R any] struct {
	l          *locker.Locker
	spec       *keyexpr.Spec
	key        *keyexpr.Key[R]   // a `key` tag's
	keys       []*keyexpr.Key[R] // a `keys` tag's (a multi-key lock); nil for `key`
	params     locker.Params
	rate       *rateGuard // a rate tag's; nil for a lock tag
	retryAfter time.Duration
	s          *settings
	outage     outage   // Unavailable refusals, logged once per outage
	mistakes   onceEach // names whose TagMistake was logged
}

// CompileLock parses tag (keyexpr.ParseTag) and builds its guard with
// NewLock.
func CompileLock[R any](l *locker.Locker, tag string, src keyexpr.Sources[R], opts ...Option) (*Lock[R], error) {
	spec, err := keyexpr.ParseTag(tag)
	if err != nil {
		return nil, err
	}
	return NewLock(l, spec, src, opts...)
}

// NewLock binds spec's key template to the adapter's sources src and
// returns the guard; nothing is checked against Redis. A `keys` tag makes a
// multi-key lock (locker.ObtainMany), a `rate` tag a rate limit
// (locker.Allow). Errors: ErrNilLocker; errors wrapping locker.ErrBadOption
// (joined); a *keyexpr.TagError for a placeholder src lacks or rejects; an
// error matching locker.ErrKindUnsupported when l cannot keep the tag's
// kind (a `limit`, `mode` or `rate` tag on a Redlock Locker).
func NewLock[R any](l *locker.Locker, spec *keyexpr.Spec, src keyexpr.Sources[R], opts ...Option) (*Lock[R], error) {
	if l == nil {
		return nil, ErrNilLocker
	}
	if spec == nil || (spec.Key == nil && spec.Keys == nil) {
		return nil, errors.Join(locker.ErrBadOption, keyexpr.ErrMissingKey)
	}
	s, err := evaluate(forLock, opts)
	if err != nil {
		return nil, err
	}
	keys, err := keyexpr.BindKeys(spec, src, keyexpr.WithMaxValueLen(s.maxValueLen))
	if err != nil {
		return nil, err
	}
	var key *keyexpr.Key[R]
	if spec.Keys == nil {
		key, keys = keys[0], nil
	}
	if spec.Rate.N > 0 {
		rg, err := newRateGuard(l, spec)
		if err != nil {
			return nil, err
		}
		return &Lock[R]{l: l, spec: spec, key: key, rate: rg, s: s}, nil
	}
	templates := make([]string, 0, len(keys))
	for _, t := range spec.Templates() {
		templates = append(templates, t.String())
	}
	params := locker.Params{TTL: spec.Expire, Wait: spec.Wait, Name: spec.Name, Template: strings.Join(templates, ","), Limit: spec.Limit}
	switch spec.Mode {
	case "read":
		params.Mode = locker.Read
	case "write":
		params.Mode = locker.Write
	}
	if err := l.Supports(params); err != nil {
		return nil, fmt.Errorf("guard: tag `%s`: %w", spec.Tag, err)
	}
	ra := s.retryAfter
	if ra == 0 {
		ra = max((spec.Wait+time.Second-1)/time.Second*time.Second, time.Second)
	}
	return &Lock[R]{
		l:          l,
		spec:       spec,
		key:        key,
		keys:       keys,
		params:     params,
		retryAfter: ra,
		s:          s,
	}, nil
}

// Spec returns the parsed tag the guard was built from.
func (g *Lock[R]) Spec() *keyexpr.Spec { return g.spec }

// MaxRequestBytes returns the WithMaxRequestBytes cap, for the adapter's
// {body...} source.
func (g *Lock[R]) MaxRequestBytes() int64 { return g.s.maxReqBytes }

// Run guards one request r: it resolves the key, obtains the lock (waiting
// up to the tag's wait, never past ctx), calls call with the lease's
// context, and releases the lock when call returns or panics, on a context
// that keeps ctx's values but not its cancellation. name is the span,
// metric and log name when the tag has none. call never runs without the
// lock, except under WithFailOpen (FailedOpen). A `keep` tag keeps the lock
// after a successful call; a `rate` tag takes no lock and admits or refuses
// (RateLimited). The Outcome's Kind says what happened; server-side
// mistakes and outages are logged once, never per request. The whole
// contract, kind by kind: docs/architecture.md#outcomes-and-statuses.
func (g *Lock[R]) Run(ctx context.Context, r R, name string, call func(ctx context.Context) error) (o Outcome) {
	if g.rate != nil {
		return g.runRate(ctx, r, name, call)
	}
	p := g.params
	if p.Name == "" {
		p.Name = name
	}
	p.Label = requestLabel(ctx, g.l, p.Name)
	o = Outcome{Kind: OK, Name: p.Name, Tag: g.spec.Tag}
	lease, err := g.obtain(ctx, r, p)
	if err != nil {
		kind := classify(err)
		if kind == Busy && g.params.Limit > 0 {
			kind = LimitFull
		}
		if kind == Unavailable && g.s.failOpen && !errors.Is(err, locker.ErrProtocol) && !errors.Is(err, locker.ErrClosed) {
			o.Kind, o.Err = FailedOpen, err
			g.outage.refused(ctx, g.s.logger, o)
			_ = call(context.WithValue(ctx, failedOpenKey{}, err))
			return o
		}
		return g.refuse(ctx, o, kind, err, name)
	}
	g.outage.answered(ctx, g.s.logger, p.Name)
	var keep time.Duration // set once the call succeeded
	defer func() {
		rerr := lease.ReleaseAfter(context.WithoutCancel(ctx), keep)
		if rerr != nil && !lease.Lost() && o.Err == nil {
			// The lease runs out in Redis on its own. Say it was the
			// release, and of which lock: the cause alone reads like a
			// failure of the request.
			o.Err = fmt.Errorf("%w: lock %s: %w", ErrReleaseFailed, p.Name, rerr)
		}
	}()
	cerr := call(lease.Context())
	if cerr == nil && !lease.Lost() {
		keep = g.spec.Keep
	}
	if errors.Is(cerr, ErrUnsuccessful) {
		cerr = nil // answered
	}
	if lease.Lost() {
		if cerr != nil {
			o.Kind, o.Err = Lost, errors.Join(locker.ErrLockLost, cerr)
		} else {
			o.Err = locker.ErrLockLost // the answer is out; say so in the log
		}
	}
	return o
}

// obtain resolves the key (or every key of a `keys` tag) and takes the
// lock. A key that cannot be resolved is reported before Redis is touched.
func (g *Lock[R]) obtain(ctx context.Context, r R, p locker.Params) (*locker.Lease, error) {
	if g.keys == nil {
		key, err := g.key.Eval(r)
		if err != nil {
			return nil, err
		}
		return g.l.Obtain(ctx, key, p)
	}
	keys := make([]string, len(g.keys))
	for i, k := range g.keys {
		v, err := k.Eval(r)
		if err != nil {
			return nil, err
		}
		keys[i] = v
	}
	return g.l.ObtainMany(ctx, keys, p)
}

// refuse fills in a refusal, marks it for an enclosing idempotency guard
// and logs what only the server can fix: a tag mistake, once per route
// (the adapter's name for it), and Redis's unavailability, once per outage.
func (g *Lock[R]) refuse(ctx context.Context, o Outcome, kind Kind, err error, route string) Outcome {
	o.Kind, o.Err = kind, err
	switch kind {
	case Busy, LimitFull:
		o.RetryAfter = g.retryAfter
		g.outage.answered(ctx, g.s.logger, o.Name)
	case RateLimited:
		// The decision's: the time to the next slot (runRate).
	case Unavailable:
		o.RetryAfter = hint
		g.outage.refused(ctx, g.s.logger, o)
	case TagMistake:
		if g.mistakes.first(route) {
			g.s.logger.ErrorContext(ctx, logTagMistake, "tag", g.spec.Tag, "name", o.Name, "route", route, "error", err)
			noteMistake(g.l, Mistake{Tag: g.spec.Tag, Name: o.Name, Route: route, Err: err, At: time.Now()})
		}
		p := g.params
		if g.rate != nil {
			p = locker.Params{Template: g.key.Template().String()} // a rate tag's
		}
		p.Name = o.Name
		g.l.ReportTagMistake(ctx, locker.MistakeEvent{Params: p, Route: route, Err: err})
	}
	if m, _ := ctx.Value(refusedKey{}).(*atomic.Bool); m != nil {
		m.Store(true)
	}
	return o
}

// failedOpenKey is the context key of the error a FailedOpen call runs with.
type failedOpenKey struct{}

// FailOpenCause returns the error for which a WithFailOpen lock guard ran its
// call without the lock, or nil if ctx is not such a call's context (the
// lock is held, or there is no lock guard). A call that must not run
// unprotected after all can check it and refuse.
func FailOpenCause(ctx context.Context) error {
	err, _ := ctx.Value(failedOpenKey{}).(error)
	return err
}

// refusedKey is the context key of an idempotency guard's refusal mark: a
// lock guard inside its call sets it when it refuses, so the refusal is
// not stored as the key's outcome.
type refusedKey struct{}
