// Package interceptor takes distributed locks around gRPC methods: a method
// with a lock rule runs its handler only while it holds the lock its key
// names, across every replica that shares the Redis.
//
// A rule is a lock tag (docs/tags.md) for a full method name, written in Go
//
//	rules := interceptor.Rules{
//		"/shop.v1.Inventory/Reserve": `key:"sku:{req.sku}" expire:"10s" wait:"1s"`,
//	}
//	ic, err := interceptor.New(lk, rules)
//	srv := grpc.NewServer(
//		grpc.ChainUnaryInterceptor(ic.Unary()),
//		grpc.ChainStreamInterceptor(ic.Stream()),
//	)
//
// or in the .proto, with the (locktag.v1.lock) method option from
// locktag/v1/options.proto, which New reads from the descriptor registry:
//
//	rpc Reserve(ReserveRequest) returns (ReserveResponse) {
//	  option (locktag.v1.lock) = { key: "sku:{req.sku}" expire: "10s" wait: "1s" };
//	}
//
// A Go rule for a method replaces its proto option. UnaryServerInterceptor
// and StreamServerInterceptor are the one-line forms; they panic where New
// returns an error.
//
// # Keys
//
// Key templates read the request through sources: {req.a.b} is a field of
// the request message by proto field names (unary methods only; checked
// against the method's request descriptor when the interceptor is built),
// {md.x-user-id} the first value of an incoming metadata key, {method} the
// full method name, and {ctx.user} or any other name a source the
// application registers with WithSource (ContextSource reads values that an
// earlier interceptor put in the context). A value that is missing or empty
// fails the call with codes.InvalidArgument: a lock is never taken on a
// shorter key.
//
// Request fields: strings and bytes are used as they are, integers in
// decimal, bools as "true"/"false", and enums by number, which stays the
// same when a value is renamed (names would change the lock's key between
// two versions of a service). A field that is not set is missing; for
// proto3 fields without presence that includes the zero value (0, false,
// "", enum value 0). Repeated, map, message and floating-point fields cannot
// name a lock and are construction errors.
//
// # Failures
//
// The handler never runs without the lock. A busy lock after the rule's wait
// fails with codes.Aborted carrying google.rpc.ErrorInfo (reason LOCK_BUSY,
// domain locktag) and google.rpc.RetryInfo; the call's deadline while
// waiting with codes.DeadlineExceeded; Redis down with codes.Unavailable,
// unless guard.WithFailOpen. If the lock is lost while the handler runs, the
// handler's context is cancelled with cause locker.ErrLockLost, and an error
// it then returns becomes codes.Aborted (reason LOCK_LOST). Statuses never
// contain the resolved key or the Redis address. WithErrorHandler replaces
// the mapping; see Code and DefaultErrorHandler.
//
// A rule with a rate (`key:"user:{md.x-user}" rate:"10/1m"`, or rate in
// the proto option) is a rate limit on its key instead of a lock: over the
// rate, codes.ResourceExhausted with ErrorInfo (reason RATE_LIMITED),
// RetryInfo (the time to the next slot) and google.rpc.QuotaFailure.
// To limit a method's rate and lock it too, give the rate rules an
// Interceptor of their own, chained before the lock's.
//
// # The guard layer
//
// The lock flow and the idempotency policy are package locker/guard's: an
// Interceptor compiles each rule into a guard.Lock over this package's
// sources, and maps the guard's typed outcomes (guard.Kind) to statuses.
// Options are Option values: the guard's own (guard.WithFailOpen,
// guard.WithMaxValueLen, guard.WithScope, ...), which every adapter
// accepts, and this package's, which only this one does: New refuses a Gin
// or Connect option with an error wrapping locker.ErrBadOption that names
// both adapters.
//
// # Streams
//
// A stream's lock is held from before the handler starts until it returns.
// Its key cannot use {req...}: the first message has not been read when the
// lock is taken.
//
// # In the handler
//
// The handler's context (for streams, stream.Context()) carries the lease:
// locker.FromContext(ctx).Token() is the fencing token to hand to storage,
// and a nested Locker.Obtain of the same key with that context re-enters the
// lock.
//
// # Clients
//
// IdempotentUnaryClientInterceptor is the client side of the idempotency
// guard: one idempotency-key per call, sent on every retry, with the
// retries of package locker/guard/retry (docs/clients.md).
package interceptor

//go:generate sh gen.sh
