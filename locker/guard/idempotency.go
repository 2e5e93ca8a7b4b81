package guard

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/locktag/locktag/locker"
)

// Idempotency is an idempotency guard for an adapter's request type R: each
// (route, caller scope, client key) runs the call at most once, and retries
// get the stored answer. It is safe for concurrent use; its only state is
// what it has logged (see WithLogger).
type Idempotency[R any] struct {
	l      *locker.Locker
	format string
	scope  ScopeFunc[R]
	s      *settings
	outage outage // Unavailable refusals, logged once per outage
}

// NewIdempotency builds an idempotency guard. format is the two-character
// name of the adapter's answer encoding, version included (the Gin adapter
// uses "H1", gRPC "G1"); a record of another format is never replayed.
// A scope is required: WithScope (for requests of type R) or
// WithPublicScope. Errors: ErrNilLocker, ErrNoScope, errors wrapping
// locker.ErrBadOption (joined).
func NewIdempotency[R any](l *locker.Locker, format string, opts ...Option) (*Idempotency[R], error) {
	if l == nil {
		return nil, ErrNilLocker
	}
	s, err := evaluate(forIdem, opts)
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	if len(format) != 2 {
		errs = append(errs, fmt.Errorf("%w: record format %q: want two characters", locker.ErrBadOption, format))
	}
	scope, err := scopeFor[R](s)
	if err != nil {
		errs = append(errs, err)
	}
	if err := joinErrs(errs); err != nil {
		return nil, err
	}
	// Refused at start-up, not per request: a Redlock Locker keeps no
	// idempotency records (locker.ErrIdempotencyUnsupported).
	if err := l.SupportsIdempotency(); err != nil {
		return nil, err
	}
	return &Idempotency[R]{l: l, format: format, scope: scope, s: s}, nil
}

// MaxResponseBytes returns the WithMaxResponseBytes cap, so that the
// adapter can stop keeping a copy of a longer answer (Answer.Oversize).
func (g *Idempotency[R]) MaxResponseBytes() int { return g.s.maxRespBytes }

// Request is one request as an idempotency guard sees it.
type Request struct {
	// Route names the key space: the method and route pattern, or the full
	// method name. Records of different routes never meet.
	Route string
	// Name is the low-cardinality name for spans and metrics; "" = Route.
	Name string
	// Keys are the idempotency key's values as received (header fields,
	// metadata values). None: the key is missing; more than one: malformed.
	Keys []string
	// Parts identify the request besides its body, e.g. method, route, path
	// and query; they and the body make its Fingerprint1.
	Parts []string
	// Canonical identify the request besides its body in canonical form,
	// e.g. method, route, normalised path, query and the headers that say
	// what the body means; they and the body make its Fingerprint2. Nil:
	// the request has only Fingerprint1.
	Canonical []string
	// Body returns the request body, reading at most max bytes; for a
	// longer body it returns an error wrapping ErrTooLarge. Nil: no body.
	Body func(max int64) ([]byte, error)
}

// Answer is what the call answered, as the adapter captured it.
type Answer struct {
	// Status is the adapter's status: an HTTP status, a gRPC code.
	Status int
	// Payload is the adapter's encoding of the rest of the answer (the
	// allow-listed headers and the body; a marshalled message or status).
	Payload []byte
	// Oversize: the adapter stopped copying the answer at
	// MaxResponseBytes (Payload is incomplete). A Payload longer than the
	// cap counts as oversize too.
	Oversize bool
	// ServerError: the status is a server-side failure; see
	// WithServerErrorPolicy.
	ServerError bool
	// Failed: the call failed (a gRPC handler returned an error). A
	// failure given after the request's context ended is not stored.
	Failed bool
	// Sent: the answer has reached, or will reach, the client as it is
	// (an HTTP response was written; a gRPC handler returned a response).
	// If the claim was lost and nothing was sent, the Outcome is Lost.
	Sent bool
	// None: the call gave nothing to store (a nil gRPC response without an
	// error); the key is freed.
	None bool
}

// Run guards one request r. Before Redis is touched it checks the key,
// resolves the scope and reads the body (MissingIdempotencyKey,
// BadIdempotencyKey, NoScope, TooLarge). Then, atomically in Redis, a new
// key is marked in flight and call runs (its context is cancelled with
// cause locker.ErrLockLost if the marker is lost) and its Answer is stored;
// a finished key gives Replay, a running one InFlight, another request's
// Mismatch. A panic or a refusal inside call frees the key so a retry runs
// afresh. The state machine: docs/idempotency.md#lifecycle.
func (g *Idempotency[R]) Run(ctx context.Context, r R, q Request, call func(ctx context.Context) Answer) Outcome {
	name := q.Name
	if name == "" {
		name = q.Route
	}
	o := Outcome{Kind: OK, Name: name, Idempotency: true}
	fail := func(k Kind, err error) Outcome {
		o.Kind, o.Err = k, err
		if k == InFlight || k == Unavailable {
			o.RetryAfter = hint
		}
		switch k {
		case Unavailable:
			g.outage.refused(ctx, g.s.logger, o)
		case InFlight, Mismatch:
			g.outage.answered(ctx, g.s.logger, name)
		}
		return o
	}
	switch {
	case len(q.Keys) == 0 && g.s.optional:
		call(ctx)
		return o
	case len(q.Keys) == 0:
		return fail(MissingIdempotencyKey, ErrIdempotencyKeyMissing)
	case len(q.Keys) > 1:
		return fail(BadIdempotencyKey, fmt.Errorf("%w: sent more than once", ErrBadIdempotencyKey))
	}
	key, err := ParseIdempotencyKey(q.Keys[0], g.s.maxKeyLen)
	if err != nil {
		return fail(BadIdempotencyKey, err)
	}
	scope := ""
	if g.scope != nil {
		if scope, err = g.scope(r); err != nil || scope == "" {
			return fail(NoScope, errors.Join(ErrScopeUnresolved, err))
		}
	}
	var body []byte
	if q.Body != nil {
		if body, err = q.Body(g.s.maxReqBytes); err == nil && int64(len(body)) > g.s.maxReqBytes {
			err = ErrTooLarge
		}
		if err != nil {
			return fail(classify(err), err)
		}
	}
	params := g.s.params
	params.Name = name
	rec := locker.IdempotencyName(q.Route, scope, key)
	fp, other := q.fingerprints(g.s.fingerprint, body)
	claim, err := g.l.Idempotent(ctx, rec, fp, params)
	if errors.Is(err, locker.ErrMismatch) {
		// The record may be this request's under the other fingerprint:
		// written by a guard of the other setting or an earlier release.
		if alt := other(); alt != "" {
			claim, err = g.l.Idempotent(ctx, rec, alt, params)
		}
	}
	if err != nil {
		return fail(classifyIdem(err), err)
	}
	g.outage.answered(ctx, g.s.logger, name)
	if out, ok := claim.Replay(); ok {
		rec, notStored, err := decodeRecord(g.format, out)
		switch {
		case err != nil:
			return fail(Internal, err)
		case notStored:
			o.Record = rec
			return fail(NotStored, ErrResponseNotStored)
		}
		o.Kind, o.Record = Replay, rec
		return o
	}
	return g.execute(ctx, claim, o, call)
}

// execute runs call holding claim, then stores the answer or frees the key.
func (g *Idempotency[R]) execute(ctx context.Context, claim *locker.Claim, o Outcome, call func(ctx context.Context) Answer) Outcome {
	bg := context.WithoutCancel(ctx)
	refused := new(atomic.Bool)
	finished := false
	defer func() {
		if !finished { // call panicked: free the key, let the panic go on
			_ = claim.Abandon(bg)
		}
	}()
	a := call(context.WithValue(claim.Context(), refusedKey{}, refused))
	finished = true
	oversize := a.Oversize || len(a.Payload) > g.s.maxRespBytes
	var err error
	stored := false // Complete rather than Abandon
	switch {
	case refused.Load():
		err = claim.Abandon(bg)
	case claim.Lost() && !a.Sent:
		_ = claim.Abandon(bg)
		o.Kind, o.Err = Lost, locker.ErrLockLost
		return o
	case a.None:
		err = claim.Abandon(bg)
	case (a.ServerError || a.Failed) && ctx.Err() != nil:
		err = claim.Abandon(bg) // the client went away; its retry runs afresh
	case a.ServerError && g.s.serverErrors == ReleaseServerErrors:
		err = claim.Abandon(bg)
	case oversize && g.s.oversize == OversizeReleaseKey:
		err = claim.Abandon(bg)
	default:
		// A failure here leaves the key in flight until its lease ends; the
		// client has its answer, a later retry may run the call again.
		stored = true
		err = claim.Complete(bg, encodeRecord(g.format, a.Status, a.Payload, oversize))
	}
	if err != nil {
		what := "freeing the key"
		if stored {
			what = "storing the answer"
		}
		o.Err = fmt.Errorf("%w: idempotency record of %s, %s: %w", ErrReleaseFailed, o.Name, what, err)
	}
	return o
}
