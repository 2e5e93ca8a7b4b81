// Package obstest is a locker.Observer for tests: it records every event
// as a line, checks that each Start is ended exactly once, and reads a
// trace id put in a context with WithTrace.
package obstest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/locktag/locktag/locker"
)

// Recorder records a Locker's events. The zero value is ready to use.
type Recorder struct {
	mu     sync.Mutex
	events []string
	open   map[*op]string // started, not yet ended
	errs   []string       // contract violations
}

// op is the state a Start method returns: one per started operation.
type op struct{ name string }

type holdKey struct{}

// HoldOf returns the hold state StartHold put in ctx (a lease's Context
// derives from it), or nil.
func HoldOf(ctx context.Context) any { return ctx.Value(holdKey{}) }

type traceKey struct{}

// WithTrace returns a context that belongs to trace id, for TraceID.
func WithTrace(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, traceKey{}, id)
}

var (
	_ locker.Observer        = (*Recorder)(nil)
	_ locker.TraceIDSource   = (*Recorder)(nil)
	_ locker.MistakeObserver = (*Recorder)(nil)
)

// TraceID returns the id WithTrace put in ctx, or "".
func (r *Recorder) TraceID(ctx context.Context) string {
	id, _ := ctx.Value(traceKey{}).(string)
	return id
}

// Events returns the events recorded so far, one line each, e.g.
// "obtain.end acquired key= fence=3 holds=1".
func (r *Recorder) Events() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...)
}

// Open returns the operations started and not ended.
func (r *Recorder) Open() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, n := range r.open {
		out = append(out, n)
	}
	return out
}

// Violations returns the contract violations seen: an End with a state no
// Start returned, or a state ended twice.
func (r *Recorder) Violations() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errs...)
}

func (r *Recorder) add(format string, args ...any) {
	r.mu.Lock()
	r.events = append(r.events, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

func (r *Recorder) start(name string) *op {
	o := &op{name: name}
	r.mu.Lock()
	if r.open == nil {
		r.open = make(map[*op]string)
	}
	r.open[o] = name
	r.events = append(r.events, name+".start")
	r.mu.Unlock()
	return o
}

// end checks state against the open operations; once marks the end (a
// renewal only looks).
func (r *Recorder) end(state any, name string, end bool) {
	o, _ := state.(*op)
	r.mu.Lock()
	defer r.mu.Unlock()
	if o == nil || r.open[o] != name {
		r.errs = append(r.errs, fmt.Sprintf("%s with state %v not open as %s", name, state, name))
		return
	}
	if end {
		delete(r.open, o)
	}
}

func (r *Recorder) StartObtain(ctx context.Context) any { return r.start("obtain") }

func (r *Recorder) EndObtain(state any, e locker.ObtainEvent) {
	r.end(state, "obtain", true)
	r.add("obtain.end %s key=%s keys=%d fence=%d holds=%d", e.Outcome, e.Key, e.Keys, e.Fence, e.Holds)
}

func (r *Recorder) StartWait(p locker.Params) { r.add("wait.start %s", p.Name) }

func (r *Recorder) EndWait(p locker.Params, waited time.Duration) { r.add("wait.end %s", p.Name) }

func (r *Recorder) StartHold(ctx context.Context, e locker.HoldEvent) (context.Context, any) {
	o := r.start("hold")
	r.add("hold.fence %d key=%s", e.Fence, e.Key)
	return context.WithValue(ctx, holdKey{}, o), o
}

func (r *Recorder) EndHold(state any, e locker.HoldEvent) {
	r.end(state, "hold", true)
	lost := e.Cause != nil && e.Cause != locker.ErrNotHeld
	r.add("hold.end fence=%d lost=%v", e.Fence, lost)
}

func (r *Recorder) Renewal(state any, e locker.RenewalEvent) {
	r.end(state, "hold", false)
	r.add("renewal ok=%v err=%v", e.OK, e.Err != nil)
}

func (r *Recorder) StartRelease(ctx context.Context) any { return r.start("release") }

func (r *Recorder) EndRelease(state any, e locker.ReleaseEvent) {
	r.end(state, "release", true)
	r.add("release.end holds=%d err=%v", e.Holds, e.Err)
}

func (r *Recorder) StartIdempotency(ctx context.Context, name string) any {
	return r.start("idempotency")
}

func (r *Recorder) EndIdempotency(state any, e locker.IdempotencyEvent) {
	r.end(state, "idempotency", true)
	r.add("idempotency.end %s %s", e.Name, e.Outcome)
}

func (r *Recorder) StartRate(ctx context.Context) any { return r.start("rate") }

func (r *Recorder) EndRate(state any, e locker.RateEvent) {
	r.end(state, "rate", true)
	r.add("rate.end %s key=%s", e.Outcome, e.Key)
}

// TagMistake records "tag_mistake name=N template=T route=R".
func (r *Recorder) TagMistake(_ context.Context, e locker.MistakeEvent) {
	r.add("tag_mistake name=%s template=%s route=%s", e.Params.Name, e.Params.Template, e.Route)
}

func (r *Recorder) StartForceRelease(ctx context.Context, e locker.ForceEvent) (context.Context, any) {
	return ctx, r.start("force")
}

func (r *Recorder) EndForceRelease(ctx context.Context, state any, e locker.ForceEvent) {
	r.end(state, "force", true)
	r.add("force.end name=%s reason=%s actor=%s owners=%d err=%v", e.Name, e.Reason, e.Actor, len(e.Owners), e.Err != nil)
}
