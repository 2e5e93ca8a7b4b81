package guard

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
)

// A release that fails after the call answered is reported as the
// release, naming the guard, with the cause still matching: the lock's
// release, and the idempotency record's storing and freeing. The Outcome
// stays OK (the answer is out), and nothing names the key.
func TestReleaseFailedSaysRelease(t *testing.T) {
	const secret = "secret-41"
	srv := redistest.Start(t)
	lk := lockerOn(t, srv.Pool(t), locker.WithCallTimeout(200*time.Millisecond))
	lock, err := CompileLock(lk, `key:"l:{v.id}"`, sources)
	if err != nil {
		t.Fatal(err)
	}
	idem, err := NewIdempotency[req](lk, "T1", WithPublicScope(), WithServerErrorPolicy(ReleaseServerErrors))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, want string
		run        func(t *testing.T) Outcome
	}{
		{"lock", "guard: release failed: lock POST /orders/{id}/pay: locker: redis unavailable", func(t *testing.T) Outcome {
			return lock.Run(t.Context(), req{"id": secret}, "POST /orders/{id}/pay", func(context.Context) error {
				srv.Stop()
				return nil
			})
		}},
		{"idempotency stored", "guard: release failed: idempotency record of POST /payments, storing the answer: locker: redis unavailable", func(t *testing.T) Outcome {
			return idem.Run(t.Context(), nil, Request{Route: "POST /payments", Keys: []string{secret}}, func(context.Context) Answer {
				srv.Stop()
				return Answer{Status: 201, Payload: []byte("ok"), Sent: true}
			})
		}},
		{"idempotency freed", "guard: release failed: idempotency record of POST /payments, freeing the key: locker: redis unavailable", func(t *testing.T) Outcome {
			return idem.Run(t.Context(), nil, Request{Route: "POST /payments", Keys: []string{secret + "b"}}, func(context.Context) Answer {
				srv.Stop()
				return Answer{Status: 500, ServerError: true, Sent: true}
			})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv.Restart()
			o := tc.run(t)
			if o.Kind != OK || !errors.Is(o.Err, ErrReleaseFailed) || !errors.Is(o.Err, locker.ErrUnavailable) {
				t.Fatalf("outcome %v, error %v: want OK with ErrReleaseFailed and ErrUnavailable", o.Kind, o.Err)
			}
			if msg := o.Err.Error(); !strings.HasPrefix(msg, tc.want) || strings.Contains(msg, secret) {
				t.Fatalf("error %q: want it to start %q and not name the key", msg, tc.want)
			}
		})
	}
}
