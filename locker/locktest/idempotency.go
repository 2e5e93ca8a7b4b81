package locktest

import (
	"bytes"
	"context"
	"io"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/locker/guard/httprecord"
)

// HTTPCall names the idempotency record of one HTTP request, as the
// net/http and Gin idempotency middlewares key it.
type HTTPCall struct {
	// Request is the request as the client sends it: its method, URL,
	// idempotency key header and body (read, and put back, by the Kit).
	Request *http.Request
	// Route is the route as the middleware names it: stdhttp's WithRoute
	// pattern, or the request's path where there is none; Gin's route
	// pattern (c.FullPath(), e.g. "/orders/:id/pay").
	Route string
	// Scope is the caller scope the guard's scope function returns for
	// the request (guard.WithScope); "" for guard.WithPublicScope.
	Scope string
	// Header is the idempotency key's header; "" is "Idempotency-Key"
	// (the middlewares' default; see their WithKeyHeader).
	Header string
	// TTL is how long a completed record is kept; 0 is 24h
	// (locker.DefaultIdempotencyTTL, the guard's default).
	TTL time.Duration
}

// identity returns the record name and fingerprint of c.
func (k *Kit) identity(c HTTPCall) (name, fp string) {
	k.t.Helper()
	r := c.Request
	if r == nil {
		k.t.Fatalf("locktest: HTTPCall without a Request")
	}
	header := c.Header
	if header == "" {
		header = "Idempotency-Key"
	}
	var body []byte
	if r.Body != nil && r.Body != http.NoBody {
		var err error
		if body, err = io.ReadAll(r.Body); err != nil {
			k.t.Fatalf("locktest: reading the request body: %v", err)
		}
		_ = r.Body.Close()
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	name, fp, err := httprecord.Request(r, c.Route, header, nil).Identity(c.Scope, body)
	if err != nil {
		k.t.Fatalf("locktest: %s %s: %v", r.Method, r.URL, err)
	}
	return name, fp
}

// Completed stores the idempotency record of c as if a first request had
// completed with status, header and body: the same request with the same
// key replays them (with "Idempotent-Replayed: true"), without running
// the handler; one with the same key and another body is refused (422).
// Every header given is stored (the middleware stores only its
// WithReplayHeaders list). It fails the test when the key is in use.
func (k *Kit) Completed(c HTTPCall, status int, header http.Header, body []byte) {
	k.t.Helper()
	name, fp := k.identity(c)
	ctx, cancel := k.ctx()
	defer cancel()
	claim, err := k.other.Idempotent(ctx, name, fp, locker.IdempotencyParams{TTL: c.TTL, Name: "locktest"})
	if err != nil {
		k.t.Fatalf("locktest: Completed %s %s: %v", c.Request.Method, c.Request.URL, err)
	}
	if _, replay := claim.Replay(); replay {
		k.t.Fatalf("locktest: Completed %s %s: the key has a record already", c.Request.Method, c.Request.URL)
	}
	names := slices.Sorted(maps.Keys(header))
	payload := httprecord.EncodeResponse(header, names, body)
	rec := guard.EncodeRecord(httprecord.Format, guard.Answer{Status: status, Payload: payload})
	if err := claim.Complete(ctx, rec); err != nil {
		k.t.Fatalf("locktest: Completed %s %s: %v", c.Request.Method, c.Request.URL, err)
	}
}

// InFlight marks the idempotency key of c in flight, as if a first
// request were running in another process, until release is called or
// the test ends: the same request is refused as in flight (409 with
// Retry-After) or, under guard.WithReplayWait, waits; release frees the
// key as a failed first request would (the next request runs the
// handler). The marker's lease is renewed meanwhile. It fails the test
// when the key is in use.
func (k *Kit) InFlight(c HTTPCall) (release func()) {
	k.t.Helper()
	name, fp := k.identity(c)
	// Not bounded by a deadline: the claim's context derives from this one
	// (its calls are bounded by the Locker's call timeout).
	claim, err := k.other.Idempotent(context.Background(), name, fp, locker.IdempotencyParams{TTL: c.TTL, Name: "locktest"})
	if err != nil {
		k.t.Fatalf("locktest: InFlight %s %s: %v", c.Request.Method, c.Request.URL, err)
	}
	if _, replay := claim.Replay(); replay {
		k.t.Fatalf("locktest: InFlight %s %s: the key has a record already", c.Request.Method, c.Request.URL)
	}
	done := false
	release = func() {
		k.t.Helper()
		if done {
			return
		}
		done = true
		ctx, cancel := k.ctx()
		defer cancel()
		if err := claim.Abandon(ctx); err != nil && !claim.Lost() {
			k.t.Errorf("locktest: releasing the in-flight key of %s %s: %v", c.Request.Method, c.Request.URL, err)
		}
	}
	k.t.Cleanup(release)
	return release
}
