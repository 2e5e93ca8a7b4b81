package otel_test

import (
	"context"
	"testing"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/lockotel"
)

// TestObtainManyTelemetry: the obtain span names the kind "multi" and the
// number of distinct keys; the held gauge counts each key and is back to 0
// after Release.
func TestObtainManyTelemetry(t *testing.T) {
	srv := redistest.Start(t)
	lk, rec := instrumented(t, srv)
	ctx := context.Background()
	le, err := lk.ObtainMany(ctx, []string{"b", "a", "b"}, locker.Params{Name: "transfer", Template: "acct:{x},acct:{y}"})
	if err != nil {
		t.Fatal(err)
	}
	a := rec.span(t, "locktag.obtain")
	if a[lockotel.AttrKind].AsString() != "multi" || a[lockotel.AttrKeys].AsInt64() != 2 || a[lockotel.AttrOutcome].AsString() != locker.OutcomeAcquired {
		t.Fatalf("obtain span %v", a)
	}
	if err := le.Release(ctx); err != nil {
		t.Fatal(err)
	}
	holds := 0
	for _, s := range rec.spans.Ended() {
		if s.Name() == "locktag.hold" {
			holds++
		}
	}
	if holds != 2 {
		t.Fatalf("%d hold spans, want one per key", holds)
	}
	if n := rec.sum(t, "locktag.lock.held"); n != 0 {
		t.Fatalf("held gauge %d after Release", n)
	}
}
