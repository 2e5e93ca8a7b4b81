package middleware

import (
	"fmt"

	"github.com/gin-gonic/gin"

	"github.com/locktag/locktag/keyexpr"
)

// DefaultMaxBodyBytes is the default cap on a request body read for a
// {body...} placeholder: 1 MiB.
const DefaultMaxBodyBytes = 1 << 20

// Option configures Lock, NewLock, LockRules and NewLockRules.
type Option func(*options)

// ErrorHandler writes the response for a request the middleware refuses (or
// whose lock was lost). err is the cause — it matches one of keyexpr's or
// locker's sentinel errors, or one of this package's — and status is the
// HTTP status the middleware chose for it. The handler should write a
// response; the chain is aborted whether it does or not.
type ErrorHandler func(c *gin.Context, err error, status int)

type options struct {
	errorHandler ErrorHandler
	failOpen     bool
	maxBodyBytes int64
	maxValueLen  int
	sources      keyexpr.Sources[*gin.Context]
	err          error // the first invalid option
}

func evaluateOptions(opts []Option) (options, error) {
	o := options{
		errorHandler: WriteProblem,
		maxBodyBytes: DefaultMaxBodyBytes,
		maxValueLen:  keyexpr.DefaultMaxValueLen,
	}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o, o.err
}

func (o *options) fail(err error) {
	if o.err == nil {
		o.err = err
	}
}

// WithErrorHandler replaces the writer of refusal responses. The default is
// WriteProblem, which writes an RFC 9457 application/problem+json body. A
// Retry-After header for 409 is set before h runs; h may remove it.
func WithErrorHandler(h ErrorHandler) Option {
	return func(o *options) {
		if h == nil {
			o.fail(fmt.Errorf("%w: WithErrorHandler(nil)", ErrBadOption))
			return
		}
		o.errorHandler = h
	}
}

// WithFailOpen makes the route run its handler WITHOUT the lock when Redis
// is unavailable or the connection pool is exhausted (an error matching
// locker.ErrUnavailable). Nothing else fails open: a busy lock, a bad key and
// the end of the caller's context are refused as usual. The handler can tell
// with FailedOpen(c), and the error is attached with c.Error. The default is
// fail-closed: 503 without running the handler.
func WithFailOpen() Option {
	return func(o *options) { o.failOpen = true }
}

// WithMaxBodyBytes caps how much of the request body a {body...}
// placeholder reads. A longer body is refused with 413 and ErrBodyTooLarge
// before Redis is touched. n must be at least 1. The default is
// DefaultMaxBodyBytes (1 MiB). Routes without a {body...} placeholder never
// read the body.
func WithMaxBodyBytes(n int64) Option {
	return func(o *options) {
		if n < 1 {
			o.fail(fmt.Errorf("%w: WithMaxBodyBytes(%d): the cap must be at least 1", ErrBadOption, n))
			return
		}
		o.maxBodyBytes = n
	}
}

// WithMaxValueLen caps the length in bytes of each placeholder's value
// (keyexpr.WithMaxValueLen). A longer value is refused with 400, or hashed
// when the tag says long:"hash". The default is 256.
func WithMaxValueLen(n int) Option {
	return func(o *options) {
		if n < 1 {
			o.fail(fmt.Errorf("%w: WithMaxValueLen(%d): the cap must be at least 1", ErrBadOption, n))
			return
		}
		o.maxValueLen = n
	}
}

// WithSource adds the key source name, so templates can use {name.path} (or
// {name} when src accepts an empty path). src is called once per placeholder
// when the middleware is built and may reject a path there; its getter runs
// per request, and an error or empty value it returns is a 400. A name that
// is already built in (path, query, form, header, body, method, route, ip)
// is replaced. There are no application sources by default. See GinKeys and
// SourceFunc for ready-made ones.
func WithSource(name string, src keyexpr.Source[*gin.Context]) Option {
	return func(o *options) {
		if name == "" || src == nil {
			o.fail(fmt.Errorf("%w: WithSource(%q): a source needs a name and a function", ErrBadOption, name))
			return
		}
		if o.sources == nil {
			o.sources = make(keyexpr.Sources[*gin.Context])
		}
		o.sources[name] = src
	}
}
