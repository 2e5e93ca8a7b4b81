package lockotel_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/lockotel"
)

// counters is a meter provider that keeps what its Int64Counters add,
// by counter name and attribute set (without the SDK, which a library
// module must not require).
type counters struct {
	noop.MeterProvider
	mu  sync.Mutex
	got map[string]map[attribute.Distinct]int64
}

type meter struct {
	noop.Meter
	c *counters
}

type counter struct {
	noop.Int64Counter
	c    *counters
	name string
}

func (c *counters) Meter(string, ...metric.MeterOption) metric.Meter { return meter{c: c} }

func (m meter) Int64Counter(name string, _ ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	return counter{c: m.c, name: name}, nil
}

func (k counter) Add(_ context.Context, n int64, opts ...metric.AddOption) {
	attrs := metric.NewAddConfig(opts).Attributes()
	k.c.mu.Lock()
	defer k.c.mu.Unlock()
	if k.c.got == nil {
		k.c.got = map[string]map[attribute.Distinct]int64{}
	}
	if k.c.got[k.name] == nil {
		k.c.got[k.name] = map[attribute.Distinct]int64{}
	}
	k.c.got[k.name][attrs.Equivalent()] += n
}

// sum is what counter name added with attributes kv.
func (c *counters) sum(name string, kv ...attribute.KeyValue) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	set := attribute.NewSet(kv...)
	return c.got[name][set.Equivalent()]
}

// TestTagMistakeCounted: a request a lock guard refused for a mistake in
// its tag is counted in locktag.lock.outcomes with outcome tag_mistake, by
// lock name, each time.
func TestTagMistakeCounted(t *testing.T) {
	mp := &counters{}
	lk := newLocker(t, redistest.Start(t), locker.WithObserver(lockotel.New(lockotel.WithMeterProvider(mp))))
	e := locker.MistakeEvent{Params: locker.Params{Name: "POST /items/:name", Template: "k:{path.id}"},
		Route: "POST /items/:name", Err: errors.New("no such parameter")}
	lk.ReportTagMistake(t.Context(), e)
	lk.ReportTagMistake(t.Context(), e)
	if n := mp.sum("locktag.lock.outcomes", lockotel.AttrLockName.String("POST /items/:name"), lockotel.AttrOutcome.String(locker.OutcomeTagMistake)); n != 2 {
		t.Fatalf("locktag.lock.outcomes{outcome=tag_mistake} = %d, want 2", n)
	}
}
