// Package retry is the client side of locktag's idempotency guards: the
// policy a client follows to retry an operation without running it twice.
// It is transport-neutral and imports only the standard library; the
// client helpers of the adapters use it — stdhttp.NewRetryTransport
// (net/http), interceptor.IdempotentUnaryClientInterceptor (gRPC) and
// connectrpc.NewIdempotentClient (connect) — and a client of another
// transport can follow it the same way.
//
// An idempotency guard protects a server only if the client sends a key
// with each operation and sends the SAME key on every retry of that
// operation: a retry with a fresh key is a new operation, and runs again.
// So a helper mints the key (NewKey) once per operation, before its first
// attempt — above every retry layer, the one in this package and any below
// it — and reuses it until the operation has an answer to return.
//
// # Which outcomes are retried
//
// A helper sorts each attempt's outcome into a Class; Policy.Retries says
// which classes are tried again:
//
//	NoAnswer     no answer (a transport error)            retried
//	InFlight     the key's first request still runs       retried
//	Throttled    429, RESOURCE_EXHAUSTED with RetryInfo   retried
//	Unavailable  503, UNAVAILABLE                         retried
//	Busy         a lock held by another operation         only with WithRetryBusy
//	KeyReused    the key was used for another request     never: ErrKeyReused
//	Done         anything else                            returned as it is
//
// # When
//
// Attempts.Wait waits before each retry: a capped exponential backoff with
// jitter (WithBackoff), and at least the delay the server asked for
// (Retry-After, google.rpc.RetryInfo) up to WithMaxRetryAfter. It gives up
// with ErrBudgetExhausted when WithMaxAttempts attempts are made or when
// the next attempt would start after the total WithBudget or the caller's
// deadline, and with the context's error when the caller's context ends
// while it waits.
package retry
