// Package httpcore is what locktag's HTTP adapters share: the Gin adapter
// (package middleware), the net/http one (package middleware/stdhttp), the
// Echo ones (middleware/lockecho, middleware/lockecho5) and the Fiber one
// (middleware/lockfiber). It holds everything about HTTP that is not about
// a router — the status of each guard.Kind, problem+json bodies,
// Retry-After, the built-in key sources (Builtins, over a Reader of the
// router's request) and the {body...} reader, the rule tables of
// LockRules, the stored-response format and its capture and replay, the
// request- and answer-side halves of the idempotency guard, the decoding
// of path parameter values (PathParam, UnescapePath), and the options
// every adapter takes — so each adapter only reads its router's request
// and hands these pieces its writer. Generic code is written over the
// adapter's request type R. It imports no router; the router syntaxes
// here (EchoParams, and PathParam's Syntax) are plain string parsing.
//
// The source is internal/httpcore, in the core module; each HTTP adapter
// module holds a generated copy in its own internal/httpcore
// (.ci/copies.sh), so that no adapter imports another module's internals.
// What every adapter package holds in the same shape on top of it (its
// options, sentinel errors, Status, New... constructors, and what the two
// Echo adapters share) is generated into the adapter from the templates in
// internal/httpcore/gen, which .ci/copies.sh runs too.
package httpcore
