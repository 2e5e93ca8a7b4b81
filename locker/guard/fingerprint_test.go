package guard

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/locktag/locktag/locker"
)

// TestFingerprintKinds: a guard writes the kind WithFingerprint names and
// honours a record of the other; a request without Canonical has only
// Fingerprint1, whatever the setting.
func TestFingerprintKinds(t *testing.T) {
	lk := newLocker(t)
	one, err := NewIdempotency[req](lk, "T1", WithPublicScope())
	if err != nil {
		t.Fatal(err)
	}
	two, err := NewIdempotency[req](lk, "T1", WithPublicScope(), WithFingerprint(Fingerprint2))
	if err != nil {
		t.Fatal(err)
	}
	ok := func(context.Context) Answer { return Answer{Status: 200, Payload: []byte("ok"), Sent: true} }
	for _, tc := range []struct {
		name        string
		first, then *Idempotency[req]
		canonical   []string
		want        Kind
	}{
		{"1 then 2", one, two, []string{"c"}, Replay},
		{"2 then 1", two, one, []string{"c"}, Replay},
		{"2 then 2, other canonical parts", two, two, []string{"d"}, Mismatch},
		{"1 then 1, other canonical parts", one, one, []string{"d"}, Replay},
		{"no canonical parts", two, two, nil, Replay},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := Request{Route: "r", Keys: []string{strings.ReplaceAll(tc.name, " ", "-")}, Parts: []string{"p"}}
			if tc.canonical != nil {
				q.Canonical = []string{"c"}
			}
			if o := tc.first.Run(t.Context(), req{}, q, ok); o.Kind != OK {
				t.Fatalf("first: %+v", o)
			}
			q.Canonical = tc.canonical
			if o := tc.then.Run(t.Context(), req{}, q, ok); o.Kind != tc.want {
				t.Fatalf("retry: %v (%v), want %v", o.Kind, o.Err, tc.want)
			}
		})
	}
}

func TestWithFingerprintRefused(t *testing.T) {
	lk := newLocker(t)
	if _, err := NewIdempotency[req](lk, "T1", WithPublicScope(), WithFingerprint(3)); !errors.Is(err, locker.ErrBadOption) {
		t.Fatalf("WithFingerprint(3): %v, want ErrBadOption", err)
	}
	if _, err := CompileLock(lk, `key:"l:{v.id}"`, sources, WithFingerprint(Fingerprint2)); !errors.Is(err, locker.ErrBadOption) {
		t.Fatalf("WithFingerprint on a lock guard: %v, want ErrBadOption", err)
	}
}
