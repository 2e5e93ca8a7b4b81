package interceptor

import (
	"context"
	"errors"

	"github.com/locktag/locktag/locker"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// Interceptor holds compiled rules. It is immutable and safe for concurrent
// use; Unary and Stream share its rules, so build one and install both.
type Interceptor struct {
	l      *locker.Locker
	o      *options
	unary  map[string]*rule
	stream map[string]*rule
}

// New compiles rules, and the (locktag.v1.lock) proto options of registered
// methods unless WithProtoOptions(false), for locks taken with l. It checks
// everything that can be checked before a request: every tag (unknown
// fields, bad durations, template syntax, unknown sources), every method
// name against the descriptor registry, every {req...} field against the
// method's request message, and that stream rules do not use {req...}. The
// error is a *RuleError, or several joined (errors.As finds the first);
// New never touches Redis.
func New(l *locker.Locker, rules Rules, opts ...Option) (*Interceptor, error) {
	if l == nil {
		return nil, errors.New("interceptor: New: nil locker")
	}
	o := evaluateOptions(opts)
	unary, stream, err := compile(rules, o)
	if err != nil {
		return nil, err
	}
	return &Interceptor{l: l, o: o, unary: unary, stream: stream}, nil
}

// UnaryServerInterceptor returns a unary server interceptor that takes each
// rule's lock before the handler and releases it after; see New for the
// rules and Interceptor.Unary for the behaviour. It panics with New's error
// if a rule is wrong, so install it where the server is built.
func UnaryServerInterceptor(l *locker.Locker, rules Rules, opts ...Option) grpc.UnaryServerInterceptor {
	return mustNew(l, rules, opts).Unary()
}

// StreamServerInterceptor returns a stream server interceptor that holds
// each rule's lock for the life of the stream; see New for the rules and
// Interceptor.Stream for the behaviour. It panics with New's error if a rule
// is wrong.
func StreamServerInterceptor(l *locker.Locker, rules Rules, opts ...Option) grpc.StreamServerInterceptor {
	return mustNew(l, rules, opts).Stream()
}

func mustNew(l *locker.Locker, rules Rules, opts []Option) *Interceptor {
	ic, err := New(l, rules, opts...)
	if err != nil {
		panic(err)
	}
	return ic
}

// Unary returns the unary server interceptor. For a method without a rule
// it calls the handler directly. Otherwise it evaluates the rule's key,
// obtains the lock (waiting up to the rule's wait, never past the call's
// deadline) and calls the handler with the lease's context: it carries the
// lease (locker.FromContext) and is cancelled with cause locker.ErrLockLost
// if the lock is lost. The lock is released when the handler returns or
// panics (the panic goes on to any recovery interceptor), on a context that
// is not cancelled.
//
// If the lock cannot be taken, the handler does not run and the call fails
// with the ErrorHandler's error (see Kind for the defaults). If the lock is
// lost before the handler returns and the handler returns an error or a nil
// response, the call fails with the ErrorHandler's error for KindLost
// (default Aborted); a response the handler did return is sent as it is.
func (ic *Interceptor) Unary() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		r := ic.unary[info.FullMethod]
		if r == nil {
			return handler(ctx, req)
		}
		msg, _ := req.(proto.Message)
		lease, err := ic.obtain(ctx, r, &Call{Ctx: ctx, FullMethod: info.FullMethod, Request: msg})
		if err != nil {
			return nil, err
		}
		if lease == nil { // fail-open
			return handler(ctx, req)
		}
		defer ic.release(ctx, lease)
		resp, err := handler(lease.Context(), req)
		if (err != nil || noResponse(resp)) && lease.Lost() {
			return nil, ic.fail(ctx, r, KindLost, errors.Join(locker.ErrLockLost, err))
		}
		return resp, err
	}
}

// Stream returns the stream server interceptor. The lock is taken before the
// handler runs, from a key that can use md, method and application sources
// (not req: the handler has not read a message yet), and held until the
// handler returns, so for the stream's whole life. The handler's
// stream.Context() is the lease's context. Failures, loss and release are as
// for Unary: if the lock is lost and the handler returns an error, the
// stream ends with the ErrorHandler's error for KindLost (default Aborted).
func (ic *Interceptor) Stream() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		r := ic.stream[info.FullMethod]
		if r == nil {
			return handler(srv, ss)
		}
		ctx := ss.Context()
		lease, err := ic.obtain(ctx, r, &Call{Ctx: ctx, FullMethod: info.FullMethod})
		if err != nil {
			return err
		}
		if lease == nil { // fail-open
			return handler(srv, ss)
		}
		defer ic.release(ctx, lease)
		err = handler(srv, &lockedStream{ServerStream: ss, ctx: lease.Context()})
		if err != nil && lease.Lost() {
			return ic.fail(ctx, r, KindLost, errors.Join(locker.ErrLockLost, err))
		}
		return err
	}
}

// obtain takes r's lock for c. It returns the lease, or (nil, nil) when Redis
// is unavailable and r fails open, or the error for the client.
func (ic *Interceptor) obtain(ctx context.Context, r *rule, c *Call) (*locker.Lease, error) {
	name, err := r.key.Eval(c)
	if err != nil {
		return nil, ic.fail(ctx, r, KindBadKey, err)
	}
	lease, err := ic.l.Obtain(ctx, name, r.params)
	if err != nil {
		kind := classify(err)
		if kind == KindUnavailable && r.failOpen {
			return nil, nil
		}
		return nil, ic.fail(ctx, r, kind, err)
	}
	return lease, nil
}

// release drops the lease on a context that keeps ctx's values but not its
// cancellation: the call may be over, the lock must still be released. Its
// error is dropped: the lock is gone (lost, and reported as such) or its
// lease will run out; the call's outcome is already decided.
func (ic *Interceptor) release(ctx context.Context, lease *locker.Lease) {
	_ = lease.Release(context.WithoutCancel(ctx))
}

// fail asks the error handler for the client's error.
func (ic *Interceptor) fail(ctx context.Context, r *rule, kind Kind, err error) error {
	f := &Failure{Kind: kind, FullMethod: r.method, Name: r.name, RetryDelay: ic.o.retryDelay, Err: err}
	if out := ic.o.errorHandler(ctx, f); out != nil {
		return out
	}
	return DefaultErrorHandler(ctx, f)
}

// noResponse reports whether a unary handler returned no response: nil, or
// a nil message pointer (which generated handlers return as a non-nil any).
func noResponse(resp any) bool {
	if resp == nil {
		return true
	}
	m, ok := resp.(proto.Message)
	return ok && !m.ProtoReflect().IsValid()
}

// lockedStream is a ServerStream whose Context is the lease's.
type lockedStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *lockedStream) Context() context.Context { return s.ctx }
