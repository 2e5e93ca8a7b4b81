package connectrpc

import (
	"context"
	"errors"
	"net/textproto"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/locktag/locktag/interceptor/connectrpc/internal/rpccore"
	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/locker/guard"
)

// ErrorHandler turns a guard's refusal into the error the client gets;
// nil means DefaultErrorHandler's. o.Err may contain the key: log it only.
type ErrorHandler func(ctx context.Context, procedure string, o guard.Outcome) *connect.Error

// Option configures New and NewIdempotency. It is guard.Option,
// so the guard's options and this package's With... options go in one
// list. Every adapter accepts the guard's options; only this one accepts
// this package's, and another adapter's option is refused at construction
// with an error wrapping locker.ErrBadOption that names both adapters.
type Option = guard.Option

// The names that option errors give this adapter: the package its options
// belong to, and the adapter that was given an option.
const (
	pkgName     = "connectrpc"
	adapterName = "connectrpc (Connect)"
)

type settings = rpccore.Settings[*Call, ErrorHandler]

// ErrUnknownMethod and the other construction errors are the same values
// as package interceptor's (see there).
var ErrUnknownMethod = rpccore.ErrUnknownMethod

// ErrBadField reports a {req...} field the request message lacks or cannot
// use.
var ErrBadField = rpccore.ErrBadField

// ErrReqInStream reports a stream rule using {req...}.
var ErrReqInStream = rpccore.ErrReqInStream

// ErrBadSource reports a placeholder path a source cannot serve, or a
// WithSource that redefines a built-in source.
var ErrBadSource = rpccore.ErrBadSource

// RuleError describes a rule that cannot be used: guard.RuleError, as
// the gRPC adapter's.
type RuleError = guard.RuleError

// builtinSources are the sources every rule can use.
var builtinSources = []string{"req", "header", "method"}

// WithSource registers an application source; built-in names cannot be
// redefined (ErrBadSource). None by default.
func WithSource(name string, src keyexpr.Source[*Call]) Option {
	return rpccore.WithSource[*Call, ErrorHandler](pkgName, name, src, builtinSources)
}

// WithErrorHandler replaces DefaultErrorHandler, for New and
// NewIdempotency.
func WithErrorHandler(h ErrorHandler) Option {
	return rpccore.WithErrorHandler[*Call](pkgName, h, h == nil)
}

// WithFailOpenFor makes the rules of the procedures named fail open
// (guard.WithFailOpen for those rules only). Each must have a rule.
func WithFailOpenFor(procedures ...string) Option {
	return rpccore.WithFailOpenFor[*Call, ErrorHandler](pkgName, procedures)
}

// WithProtoOptions turns reading (locktag.v1.lock) options on or off. The
// default is on.
func WithProtoOptions(on bool) Option {
	return rpccore.WithProtoOptions[*Call, ErrorHandler](pkgName, on)
}

// WithRegistry sets where procedures and response types are looked up.
// The defaults are protoregistry.GlobalFiles and GlobalTypes.
func WithRegistry(files *protoregistry.Files, types *protoregistry.Types) Option {
	return rpccore.WithRegistry[*Call, ErrorHandler](pkgName, files, types)
}

// sourcesFor returns the sources a rule for m binds against.
func sourcesFor(m rpccore.Method, extra keyexpr.Sources[*Call]) keyexpr.Sources[*Call] {
	src := keyexpr.Sources[*Call]{}.With("req", func(path string) (keyexpr.Getter[*Call], error) {
		return rpccore.BindReq(m, path, func(c *Call) proto.Message { return c.Request })
	})
	src["header"] = func(path string) (keyexpr.Getter[*Call], error) {
		if path == "" {
			return nil, errors.New("write {header.NAME}")
		}
		key := textproto.CanonicalMIMEHeaderKey(path)
		return func(c *Call) (string, error) { return c.Header.Get(key), nil }, nil
	}
	src["method"] = func(path string) (keyexpr.Getter[*Call], error) {
		if path != "" {
			return nil, errors.New("{method} takes no path")
		}
		return func(c *Call) (string, error) { return c.Procedure, nil }, nil
	}
	for name, s := range extra {
		src[name] = s
	}
	return src
}

// Code returns the connect code an outcome of kind k is answered with:
// the gRPC adapter's table (InvalidArgument, Aborted, Unavailable,
// DeadlineExceeded, ...). 0 for the kinds in which the handler ran.
func Code(k guard.Kind) connect.Code { return connect.Code(rpccore.CodeOf(k)) }

// DefaultErrorHandler maps an outcome to a *connect.Error with Code(o.Kind),
// a message that names no key, value or address, and the gRPC adapter's
// details: google.rpc.ErrorInfo (domain "locktag", reasons such as
// LOCK_BUSY, RATE_LIMITED), google.rpc.RetryInfo with a retry hint,
// google.rpc.QuotaFailure for a rate rule's refusal, google.rpc.BadRequest
// for a bad {req...} value.
func DefaultErrorHandler(_ context.Context, _ string, o guard.Outcome) *connect.Error {
	c, msg, details := rpccore.Refusal(o)
	return newError(connect.Code(c), msg, details)
}

func newError(c connect.Code, msg string, details []proto.Message) *connect.Error {
	err := connect.NewError(c, errors.New(msg))
	for _, d := range details {
		if ed, e := connect.NewErrorDetail(d); e == nil {
			err.AddDetail(ed)
		}
	}
	return err
}

// fail asks the error handler for the client's error.
func fail(s *settings, ctx context.Context, procedure string, o guard.Outcome) error {
	if out := s.ErrorHandler(ctx, procedure, o); out != nil {
		return out
	}
	return DefaultErrorHandler(ctx, procedure, o)
}

// RetryDelay returns the RetryInfo hint in a refusal, or 0: for clients.
func RetryDelay(err error) time.Duration {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return 0
	}
	for _, d := range ce.Details() {
		if v, e := d.Value(); e == nil {
			if ri, ok := v.(*errdetails.RetryInfo); ok {
				return ri.GetRetryDelay().AsDuration()
			}
		}
	}
	return 0
}
