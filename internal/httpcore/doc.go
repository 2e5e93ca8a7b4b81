// Package httpcore is what locktag's HTTP adapters share: the Gin adapter
// (package middleware), the net/http one (package middleware/stdhttp) and
// the Echo ones (middleware/lockecho, middleware/lockecho5).
// It holds everything about HTTP that is not about a router — the status of
// each guard.Kind, problem+json bodies, Retry-After, the {body...} reader,
// the stored-response format and its capture and replay, the request- and
// answer-side halves of the idempotency guard, and the options both
// adapters take — so each adapter only reads its router's request and
// hands these pieces its writer. It imports no router.
//
// The source is internal/httpcore, in the core module; each HTTP adapter
// module holds a generated copy in its own internal/httpcore
// (.ci/copies.sh), so that no adapter imports another module's internals.
package httpcore
