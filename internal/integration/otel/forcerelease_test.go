package otel_test

import (
	"context"
	"testing"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/lockotel"
)

// TestForceReleaseSpan: with a tracer the call is a span with the reason,
// the actor and an event naming the freed owner; the holder's hold span
// records the loss.
func TestForceReleaseSpan(t *testing.T) {
	srv := redistest.Start(t)
	lk, rec := instrumented(t, srv)
	ctx := context.Background()
	le := mustObtain(t, lk, ctx, "traced", locker.Params{})
	owner, _ := lockState(t, srv, "traced")
	if err := lk.ForceRelease(locker.WithActor(ctx, "bob"), "traced", "span test"); err != nil {
		t.Fatal(err)
	}
	checkForced(t, le, "span test")
	attrs := rec.span(t, "locktag.force_release")
	if attrs[lockotel.AttrReason].AsString() != "span test" || attrs[lockotel.AttrActor].AsString() != "bob" {
		t.Errorf("span attributes %v", attrs)
	}
	var owners []string
	for _, s := range rec.spans.Ended() {
		if s.Name() == "locktag.force_release" {
			for _, e := range s.Events() {
				if e.Name == "locktag.force_released" {
					for _, kv := range e.Attributes {
						if kv.Key == lockotel.AttrOwners {
							owners = kv.Value.AsStringSlice()
						}
					}
				}
			}
		}
	}
	if len(owners) != 1 || owners[0] != owner {
		t.Errorf("event owners %v, want [%s]", owners, owner)
	}
	if ev := rec.events("locktag.hold"); len(ev) == 0 || ev[len(ev)-1] != "locktag.lock_lost" {
		t.Errorf("hold span events %v, want locktag.lock_lost", ev)
	}
}
