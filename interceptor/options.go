package interceptor

import (
	"fmt"
	"slices"
	"time"

	"github.com/locktag/locktag/keyexpr"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// Option configures an Interceptor.
type Option func(*options)

type options struct {
	sources         keyexpr.Sources[*Call]
	errorHandler    ErrorHandler
	failOpenAll     bool
	failOpenMethods []string
	protoOptions    bool
	files           *protoregistry.Files
	retryDelay      time.Duration
	maxValueLen     int     // 0 = keyexpr's default
	errs            []error // reported by New
}

// DefaultRetryDelay is the retry delay the default error handler advertises
// in google.rpc.RetryInfo when a lock is busy.
const DefaultRetryDelay = time.Second

// evaluateOptions starts from a copy of the defaults and applies opts.
func evaluateOptions(opts []Option) *options {
	o := &options{
		errorHandler: DefaultErrorHandler,
		protoOptions: true,
		files:        protoregistry.GlobalFiles,
		retryDelay:   DefaultRetryDelay,
	}
	for _, opt := range opts {
		if opt != nil {
			opt(o)
		}
	}
	return o
}

// WithSource registers an application source: a placeholder {name.path} in
// any rule is bound by calling src(path) when the interceptor is built (an
// error there is a construction error), and the Getter it returns is called
// for every locked call. ContextSource builds one for values in the call's
// context, such as {ctx.user}. The built-in sources req, md and method
// cannot be redefined. There are no application sources by default.
func WithSource(name string, src keyexpr.Source[*Call]) Option {
	return func(o *options) {
		switch {
		case slices.Contains(builtinSources, name):
			o.errs = append(o.errs, fmt.Errorf("%w: WithSource(%q): %q is a built-in source", ErrBadSource, name, name))
		case src == nil:
			o.errs = append(o.errs, fmt.Errorf("%w: WithSource(%q): nil source", ErrBadSource, name))
		default:
			if o.sources == nil {
				o.sources = keyexpr.Sources[*Call]{}
			}
			o.sources[name] = src
		}
	}
}

// WithErrorHandler replaces the mapping of lock failures to the errors the
// client sees. h is called when a call cannot take its lock (the handler
// does not run) and when the lock was lost while the handler ran (see
// KindLost); what it returns is the call's error. If h returns nil the
// default handler's error is used: the handler never runs without its lock
// (except with WithFailOpen). The default is DefaultErrorHandler.
func WithErrorHandler(h ErrorHandler) Option {
	return func(o *options) {
		if h != nil {
			o.errorHandler = h
		}
	}
}

// WithFailOpen makes calls run their handler without a lock when Redis is
// unavailable (or the client's connection pool is exhausted), instead of
// failing with codes.Unavailable. The handler's context then carries no
// lease (locker.FromContext returns nil). Without arguments it applies to
// every rule; otherwise only to the rules of the full methods named, each of
// which must have a rule. Busy locks and bad keys still fail. The default is
// fail-closed.
func WithFailOpen(fullMethods ...string) Option {
	return func(o *options) {
		if len(fullMethods) == 0 {
			o.failOpenAll = true
			return
		}
		o.failOpenMethods = append(o.failOpenMethods, fullMethods...)
	}
}

// WithProtoOptions turns reading rules from (locktag.v1.lock) method options
// on or off. When on, every method in the registry (see WithFiles) whose
// options carry the extension gets that rule, unless Rules has an entry for
// it. The default is on.
func WithProtoOptions(on bool) Option {
	return func(o *options) { o.protoOptions = on }
}

// WithFiles sets the descriptor registry in which rules' methods are looked
// up (to validate {req...} fields against the request message and to tell
// unary from streaming methods) and proto options are read. The default is
// protoregistry.GlobalFiles, where generated code registers itself.
func WithFiles(files *protoregistry.Files) Option {
	return func(o *options) {
		if files != nil {
			o.files = files
		}
	}
}

// WithRetryDelay sets the delay the default error handler advertises in the
// google.rpc.RetryInfo of a busy lock's Aborted status (Failure.RetryDelay).
// The default is DefaultRetryDelay (1s).
func WithRetryDelay(d time.Duration) Option {
	return func(o *options) {
		if d >= 0 {
			o.retryDelay = d
		}
	}
}

// WithMaxValueLen caps the length, in bytes, of each key placeholder's raw
// value; a longer value fails the call with codes.InvalidArgument, or is
// hashed when the rule's tag says long:"hash". n must be at least 1. The
// default is keyexpr.DefaultMaxValueLen (256).
func WithMaxValueLen(n int) Option {
	return func(o *options) {
		if n < 1 {
			o.errs = append(o.errs, fmt.Errorf("%w: WithMaxValueLen(%d): the cap must be at least 1", ErrBadOption, n))
			return
		}
		o.maxValueLen = n
	}
}
