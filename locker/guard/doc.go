// Package guard is locktag's transport-neutral guard layer: the one place
// where a lock tag becomes a lock around a call, and where the idempotency
// policy lives. The Gin adapter (package middleware) and the gRPC adapter
// (package interceptor) are thin layers over it, and an application can
// write its own adapter the same way (see the examples).
//
// # Lock guards
//
// CompileLock (or NewLock, for a *keyexpr.Spec built with keyexpr.NewSpec)
// binds a tag's key template, once, to the adapter's keyexpr.Sources[R] —
// the functions that read a value from the adapter's request type R. For
// each request, Lock.Run resolves the key, obtains the lock through a
// locker.Locker, runs the adapter's call with the lease's context and
// releases the lock afterwards — also when the call panics:
//
//	g, err := guard.CompileLock(lk, `key:"job:{arg.id}" wait:"1s"`, sources)
//	...
//	o := g.Run(ctx, req, "jobs", func(ctx context.Context) error { return run(ctx, req) })
//
// # Rate guards
//
// A tag with a `rate` field (`key:"api:{header.X-User}" rate:"100/1m"`)
// builds a Lock that limits how often its key is used instead of locking
// it: Run decides each request with locker.Allow and runs the call when
// it is admitted; a refusal is RateLimited, with the exact time to the
// next slot and a Quota for the adapter's rate-limit fields. Chain a rate
// guard before any lock guard of the same request, so a refused request
// never queues for the lock.
//
// # Idempotency guards
//
// NewIdempotency builds a guard that runs a call at most once per (route,
// caller scope, client key) and gives retries the stored answer. The guard
// owns the policy: the options, the fingerprint, the record format and
// its version, replay, and what happens to server errors and oversized
// answers. The adapter owns how an answer is captured (Answer) and sent
// again (Outcome.Record).
//
// A lock guard inside an idempotency guard's call that refuses a request
// (bad key, busy, unavailable...) marks the refusal in the call's context,
// so the idempotency guard frees the key instead of storing the refusal:
// put the idempotency guard first.
//
// # Outcomes
//
// Run returns an Outcome: a Kind, the cause (for logs only), a retry hint
// and, for a replay, the stored Record. The guard decides nothing about
// statuses; each adapter maps kinds to its own (docs/architecture.md has
// the table for HTTP and gRPC). Options are Option values, and every
// adapter's Option is this type, so users pass one list. An adapter adds
// its own options with AdapterOption and applies them with
// ApplyAdapterOptions, which refuses an option of another adapter at
// construction with an error wrapping locker.ErrBadOption that names both
// adapters.
package guard
