package lockotel_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/lockotel"
	"github.com/locktag/locktag/locker/redigo"
)

// recorder is a tracer provider that keeps its spans: enough to check
// names, attributes and parents without the SDK (which a library module
// must not require; internal/integration/otel checks the rest with it).
type recorder struct {
	noop.TracerProvider
	mu    sync.Mutex
	spans []*span
	next  byte
}

type tracer struct {
	noop.Tracer
	r *recorder
}

type span struct {
	trace.Span // the no-op methods not overridden
	r          *recorder
	name       string
	sc         trace.SpanContext
	parent     trace.SpanContext
	attrs      map[attribute.Key]attribute.Value
	events     []string
	status     codes.Code
	ended      bool
}

func (r *recorder) Tracer(string, ...trace.TracerOption) trace.Tracer { return tracer{r: r} }

func (t tracer) Start(ctx context.Context, name string, _ ...trace.SpanStartOption) (context.Context, trace.Span) {
	t.r.mu.Lock()
	t.r.next++
	id := t.r.next
	t.r.mu.Unlock()
	parent := trace.SpanContextFromContext(ctx)
	tid := parent.TraceID()
	if !tid.IsValid() {
		tid = trace.TraceID{1, id}
	}
	s := &span{Span: noop.Span{}, r: t.r, name: name, parent: parent, attrs: map[attribute.Key]attribute.Value{},
		sc: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{id}, TraceFlags: trace.FlagsSampled})}
	t.r.mu.Lock()
	t.r.spans = append(t.r.spans, s)
	t.r.mu.Unlock()
	return trace.ContextWithSpan(ctx, s), s
}

func (s *span) SpanContext() trace.SpanContext { return s.sc }
func (s *span) IsRecording() bool              { return true }

// The span's fields are guarded by its recorder's mu.
func (s *span) End(...trace.SpanEndOption) {
	s.r.mu.Lock()
	s.ended = true
	s.r.mu.Unlock()
}

func (s *span) SetStatus(c codes.Code, _ string) {
	s.r.mu.Lock()
	s.status = c
	s.r.mu.Unlock()
}

func (s *span) AddEvent(name string, _ ...trace.EventOption) {
	s.r.mu.Lock()
	s.events = append(s.events, name)
	s.r.mu.Unlock()
}

func (s *span) SetAttributes(kv ...attribute.KeyValue) {
	s.r.mu.Lock()
	for _, a := range kv {
		s.attrs[a.Key] = a.Value
	}
	s.r.mu.Unlock()
}

// find returns the spans named name.
func (r *recorder) find(name string) []*span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*span
	for _, s := range r.spans {
		if s.name == name {
			out = append(out, s)
		}
	}
	return out
}

func newLocker(t *testing.T, srv *redistest.Server, opts ...locker.Option) *locker.Locker {
	t.Helper()
	lk, err := locker.New(redigo.New(srv.Pool(t)), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk.Close() })
	return lk
}

// The hold span is the parent of work under the lease's Context, the
// spans carry the lock's attributes, and the key only when asked.
func TestSpans(t *testing.T) {
	srv := redistest.Start(t)
	for _, keys := range []bool{false, true} {
		rec := &recorder{}
		lk := newLocker(t, srv, locker.WithObserver(lockotel.New(lockotel.WithTracerProvider(rec))), locker.WithKeyAttribute(keys))
		ctx := context.Background()
		le, err := lk.Obtain(ctx, "order:42", locker.Params{Name: "pay", Template: "order:{id}", TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		holds := rec.find("locktag.hold")
		if len(holds) != 1 || !trace.SpanContextFromContext(le.Context()).Equal(holds[0].sc) {
			t.Fatalf("lease context does not carry the hold span (%d holds)", len(holds))
		}
		if err := le.Release(ctx); err != nil {
			t.Fatal(err)
		}
		ob := rec.find("locktag.obtain")[0]
		if ob.attrs[lockotel.AttrOutcome].AsString() != locker.OutcomeAcquired || ob.attrs[lockotel.AttrLockName].AsString() != "pay" ||
			ob.attrs[lockotel.AttrKeyTemplate].AsString() != "order:{id}" || ob.attrs[lockotel.AttrFence].AsInt64() != le.Token() ||
			ob.attrs[lockotel.AttrKind].AsString() != "mutex" || ob.attrs[lockotel.AttrMode].AsString() != "fixed" {
			t.Errorf("obtain span attributes %v", ob.attrs)
		}
		if _, has := ob.attrs[lockotel.AttrKey]; has != keys {
			t.Errorf("WithKeyAttribute(%v): obtain span has locktag.key: %v", keys, has)
		}
		if rel := rec.find("locktag.release"); len(rel) != 1 || !rel[0].ended || rel[0].attrs[lockotel.AttrHolds].AsInt64() != 1 {
			t.Errorf("release span %+v", rel)
		}
		if !holds[0].ended {
			t.Error("hold span not ended by the release")
		}
	}
}

// A lost lock marks its hold span; a force-release is audited on its own
// span.
func TestLostAndForced(t *testing.T) {
	srv := redistest.Start(t)
	rec := &recorder{}
	lk := newLocker(t, srv, locker.WithObserver(lockotel.New(lockotel.WithTracerProvider(rec))))
	ctx := context.Background()
	le, err := lk.Obtain(ctx, "k", locker.Params{TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	lctx := le.Context() // tracked from here: the force-release ends it
	if err := lk.ForceRelease(locker.WithActor(ctx, "bob"), "k", "stuck"); err != nil {
		t.Fatal(err)
	}
	testwait.Recv(t, lctx.Done(), "the lease's end")
	fr := rec.find("locktag.force_release")
	if len(fr) != 1 || fr[0].attrs[lockotel.AttrActor].AsString() != "bob" || len(fr[0].events) != 1 || fr[0].events[0] != "locktag.force_released" {
		t.Fatalf("force_release span %+v", fr)
	}
	h := rec.find("locktag.hold")[0]
	// The span is ended after the context is cancelled (Lease.finish).
	testwait.Eventually(t, "the hold span's end", func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return h.ended
	})
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if h.status != codes.Error || len(h.events) != 1 || h.events[0] != "locktag.lock_lost" {
		t.Fatalf("lost hold: status %v, events %v", h.status, h.events)
	}
}

func TestTraceID(t *testing.T) {
	o := lockotel.New()
	if id := o.TraceID(context.Background()); id != "" {
		t.Fatalf("TraceID without a span: %q", id)
	}
	tid := trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{1}})
	if id := o.TraceID(trace.ContextWithSpanContext(context.Background(), sc)); id != tid.String() {
		t.Fatalf("TraceID %q, want %q", id, tid)
	}
}

func TestBadOptions(t *testing.T) {
	for _, o := range []lockotel.Option{lockotel.WithTracerProvider(nil), lockotel.WithMeterProvider(nil), nil} {
		if err := lockotel.New(o).Validate(); !errors.Is(err, locker.ErrBadOption) {
			t.Errorf("Validate: %v", err)
		}
	}
	if err := lockotel.New().Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestUnsetAllocations: with the global providers still unset, an
// Observer starts no span, so a lock+unlock allocates no more than
// without one (counts, not times).
func TestUnsetAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	srv := redistest.Start(t)
	count := func(lk *locker.Locker) float64 {
		ctx := context.Background()
		p := locker.Params{TTL: 10 * time.Second, Name: "allocs"}
		return testing.AllocsPerRun(200, func() {
			le, err := lk.Obtain(ctx, "allocs", p)
			if err != nil {
				t.Fatal(err)
			}
			_ = le.Release(ctx)
		})
	}
	without := count(newLocker(t, srv))
	with := count(newLocker(t, srv, locker.WithObserver(lockotel.New())))
	t.Logf("allocations per lock+unlock: %v without an Observer, %v with lockotel and no provider set", without, with)
	if with > without {
		t.Errorf("lockotel with no provider set: %v allocations, without an Observer %v", with, without)
	}
}
