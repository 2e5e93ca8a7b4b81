package middleware

import (
	"github.com/gin-gonic/gin"

	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/middleware/internal/httpcore"
)

// ErrorHandler writes the response for a request a guard refused (or whose
// lock or claim was lost before anything was written). o is the guard's
// outcome — o.Kind says what happened, o.Err is the cause for logs — and
// status is the HTTP status this package chose for it. The handler should
// write a response; the chain is aborted whether it does or not.
type ErrorHandler func(c *gin.Context, o guard.Outcome, status int)

// Defaults of the idempotency middleware.
const (
	// DefaultIdempotencyHeader is the request header carrying the key.
	DefaultIdempotencyHeader = httpcore.DefaultIdempotencyHeader
	// ReplayedHeader is set to "true" on every replayed response.
	ReplayedHeader = httpcore.ReplayedHeader
)

// DefaultReplayHeaders returns the response headers stored and replayed
// unless WithReplayHeaders says otherwise: Content-Type, Content-Language,
// Content-Encoding, Content-Disposition, Location, ETag and Last-Modified.
// Each call returns a new slice.
func DefaultReplayHeaders() []string { return httpcore.DefaultReplayHeaders() }

// Option configures Lock, LockRules and Idempotency. It is guard.Option,
// so the guard's options and this package's With... options go in one
// list. Every adapter accepts the guard's options; only this one accepts
// this package's, and another adapter's option is refused at construction
// with an error wrapping locker.ErrBadOption that names both adapters.
type Option = guard.Option

// The names that option errors give this adapter: the package its options
// belong to, and the adapter that was given an option.
const (
	pkgName     = "middleware"
	adapterName = "middleware (Gin)"
)

// settings are this adapter's own options, beside the guard's.
type settings = httpcore.Settings[*gin.Context, ErrorHandler]

func evaluateOptions(t guard.Target, opts []guard.Option) (*settings, error) {
	return httpcore.Evaluate[*gin.Context](adapterName, t, opts, ErrorHandler(WriteProblem))
}

// WithErrorHandler replaces the writer of refusal responses, for Lock,
// LockRules and Idempotency. The default is WriteProblem, which writes an
// RFC 9457 application/problem+json body. A Retry-After header is set
// before h runs when the outcome has a retry hint, and for every 503 (1s
// when the outcome has none); h may remove it.
func WithErrorHandler(h ErrorHandler) Option {
	return httpcore.WithErrorHandler[*gin.Context](pkgName, h, h == nil)
}

// WithSource adds the key source name for Lock and LockRules, so
// templates can use {name.path} (or {name} when src accepts an empty path).
// src is called once per placeholder when the middleware is built and may
// reject a path there; its getter runs per request, and an error or empty
// value it returns is a 400. A built-in name (path, query, form, header,
// body, method, route, ip) is replaced. There are no application sources by
// default. See GinKeys and SourceFunc for ready-made ones.
func WithSource(name string, src keyexpr.Source[*gin.Context]) Option {
	return httpcore.WithSource[*gin.Context, ErrorHandler](pkgName, name, src)
}

// WithKeyHeader sets the request header that carries the idempotency key.
// Idempotency only. The default is DefaultIdempotencyHeader.
func WithKeyHeader(name string) Option {
	return httpcore.WithKeyHeader[*gin.Context, ErrorHandler](pkgName, name)
}

// WithReplayHeaders replaces the response headers that are stored and
// replayed with a response. Idempotency only. The default is
// DefaultReplayHeaders(). Set-Cookie and other per-caller headers do not
// belong here.
func WithReplayHeaders(names ...string) Option {
	return httpcore.WithReplayHeaders[*gin.Context, ErrorHandler](pkgName, names...)
}
