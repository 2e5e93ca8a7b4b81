package stdhttp

import (
	"errors"
	"net/http"

	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/middleware/stdhttp/internal/httpcore"
)

// ErrorHandler writes the response for a request a guard refused (or whose
// lock or claim was lost before anything was written). o is the guard's
// outcome — o.Kind says what happened, o.Err is the cause for logs — and
// status is the HTTP status this package chose for it (Status). The next
// handler does not run.
type ErrorHandler func(w http.ResponseWriter, r *http.Request, o guard.Outcome, status int)

// Option configures NewLock and NewIdempotency. It is guard.Option,
// so the guard's options and this package's With... options go in one
// list. Every adapter accepts the guard's options; only this one accepts
// this package's, and another adapter's option is refused at construction
// with an error wrapping locker.ErrBadOption that names both adapters.
type Option = guard.Option

// The names that option errors give this adapter: the package its options
// belong to, and the adapter that was given an option.
const (
	pkgName     = "stdhttp"
	adapterName = "stdhttp (net/http)"
)

type settings = httpcore.Settings[*http.Request, ErrorHandler]

func evaluateOptions(t guard.Target, opts []guard.Option) (*settings, error) {
	s, err := httpcore.Evaluate[*http.Request](adapterName, t, opts, ErrorHandler(WriteProblem))
	if s.PathValue == nil {
		s.PathValue = (*http.Request).PathValue
	}
	if s.Route == nil {
		s.Route = func(r *http.Request) string { return r.Pattern }
	}
	return s, err
}

// WithErrorHandler replaces the writer of refusal responses, for NewLock
// and NewIdempotency. The default is WriteProblem. A Retry-After header is
// set before h runs when the outcome has a retry hint, and for every 503
// (1s when the outcome has none); h may remove it.
func WithErrorHandler(h ErrorHandler) Option {
	return httpcore.WithErrorHandler[*http.Request](pkgName, h, h == nil)
}

// WithSource adds the key source name for NewLock, so templates can use
// {name.path} (or {name} with SourceFunc). src is called once per
// placeholder when the guard is built and may reject a path there; its
// getter runs per request, and an error or empty value it returns is a
// 400. A built-in name (path, query, form, header, body, method, route,
// ip) is replaced — e.g. "ip" for a service behind a proxy. There are no
// application sources by default.
func WithSource(name string, src keyexpr.Source[*http.Request]) Option {
	return httpcore.WithSource[*http.Request, ErrorHandler](pkgName, name, src)
}

// SourceFunc returns a source without a path, for WithSource: get runs
// once per request, and a template that gives it a path is a registration
// error.
func SourceFunc(get func(r *http.Request) (string, error)) keyexpr.Source[*http.Request] {
	return httpcore.SourceFunc(get)
}

// WithPathValue sets how {path.X} reads a path parameter, for routers
// other than http.ServeMux:
//
//	stdhttp.WithPathValue(chi.URLParam)                                          // chi
//	stdhttp.WithPathValue(func(r *http.Request, k string) string { return mux.Vars(r)[k] }) // gorilla/mux
//
// With it, an empty value is a 400 and Lock.Check cannot check patterns.
// The default is (*http.Request).PathValue, which ServeMux (Go 1.22+) fills.
func WithPathValue(get func(r *http.Request, name string) string) Option {
	return guard.AdapterOption(pkgName, "WithPathValue", guard.LockGuards, func(s *settings) error {
		if get == nil {
			return errors.New("nil function")
		}
		s.PathValue = get
		return nil
	})
}

// WithRoute sets how a request's route pattern is read: the {route}
// source, the lock's name, and the idempotency key space. The default is
// r.Pattern, which ServeMux sets (chi 5.2+ too); where it is empty an
// idempotency guard uses the request path instead.
func WithRoute(route func(r *http.Request) string) Option {
	return guard.AdapterOption(pkgName, "WithRoute", guard.AllGuards, func(s *settings) error {
		if route == nil {
			return errors.New("nil function")
		}
		s.Route = route
		return nil
	})
}

// WithKeyHeader sets the request header that carries the idempotency key.
// NewIdempotency only. The default is DefaultIdempotencyHeader.
func WithKeyHeader(name string) Option {
	return httpcore.WithKeyHeader[*http.Request, ErrorHandler](pkgName, name)
}

// WithReplayHeaders replaces the response headers stored and replayed
// with a response. NewIdempotency only. The default is
// DefaultReplayHeaders().
func WithReplayHeaders(names ...string) Option {
	return httpcore.WithReplayHeaders[*http.Request, ErrorHandler](pkgName, names...)
}

// DefaultReplayHeaders returns the response headers stored and replayed
// unless WithReplayHeaders says otherwise (as the Gin adapter's).
func DefaultReplayHeaders() []string { return httpcore.DefaultReplayHeaders() }

// Defaults of the idempotency guard, as the Gin adapter's.
const (
	DefaultIdempotencyHeader = httpcore.DefaultIdempotencyHeader
	ReplayedHeader           = httpcore.ReplayedHeader
	ProblemContentType       = httpcore.ProblemContentType
)

// ErrBadRule means that Lock.Check found a {path.X} the pattern lacks. The
// same value as package middleware's, as are the body errors below.
var ErrBadRule = httpcore.ErrBadRule

// ErrBodyTooLarge reports a body over guard.WithMaxRequestBytes (413).
var ErrBodyTooLarge = httpcore.ErrBodyTooLarge

// ErrBodyNotJSON reports a {body...} placeholder on a body that is not
// JSON (400).
var ErrBodyNotJSON = httpcore.ErrBodyNotJSON

// ErrNoRouteParam reports, at request time, a {path.X} the pattern lacks
// (500).
var ErrNoRouteParam = httpcore.ErrNoRouteParam

// Status returns the HTTP status of an outcome of kind k: the Gin
// adapter's table (400, 401, 409 + Retry-After, 413, 422, 429, 500, 503).
func Status(k guard.Kind) int { return httpcore.Status(k) }

// WriteProblem is the default ErrorHandler: status with the RFC 9457
// application/problem+json body the Gin adapter writes.
func WriteProblem(w http.ResponseWriter, _ *http.Request, o guard.Outcome, status int) {
	w.Header().Set("Content-Type", ProblemContentType)
	w.WriteHeader(status)
	_, _ = w.Write(httpcore.Problem(o, status))
}

// refuse sets Retry-After (and a rate tag's RateLimit fields) and hands
// the outcome to the error handler.
func refuse(w http.ResponseWriter, r *http.Request, s *settings, o guard.Outcome) {
	httpcore.SetRefusalHeaders(w.Header(), o)
	s.ErrorHandler(w, r, o, Status(o.Kind))
}

// RetryOption configures NewRetryTransport.
type RetryOption func(*retrySettings)

type retrySettings struct {
	header  string
	methods []string

	maxBuffered int64 // WithMaxBufferedBody, in client.go
}

// WithRetryKeyHeader sets the request header that carries the idempotency
// key, as the server's WithKeyHeader does. The default is
// "Idempotency-Key"; "" keeps it.
func WithRetryKeyHeader(name string) RetryOption {
	return func(s *retrySettings) {
		if name != "" {
			s.header = http.CanonicalHeaderKey(name)
		}
	}
}

// WithRetryKeyMethods sets the methods whose requests get a key when the
// caller set none (and so are retried). The default is POST and PATCH;
// none gives no request a key, so only keyed requests the caller made and
// idempotent methods are retried.
func WithRetryKeyMethods(methods ...string) RetryOption {
	return func(s *retrySettings) { s.methods = append([]string(nil), methods...) }
}
