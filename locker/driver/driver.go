package driver

import (
	"context"
	"errors"

	"github.com/locktag/locktag/internal/optionerr"
)

// Driver is the seam between the lock core and a Redis client. The core
// needs only two things from Redis: run a script on some keys, and listen on
// channels. All keys of one call share a Redis Cluster hash slot.
//
// A Driver that also implements io.Closer is closed by the Locker's Close
// (it should then release what it opened itself, never the client it was
// given). A Driver that also implements [Validator] is validated once when
// the Locker is built.
type Driver interface {
	// Eval runs s with keys and args and returns the reply with integers as
	// int64, bulk strings as string, arrays as []any and nil for a nil reply.
	// It uses EVALSHA and falls back to EVAL on NOSCRIPT. A Redis error reply
	// is returned as an error. Eval honours ctx's deadline and cancellation.
	// A call that was never sent returns an error wrapping ErrNotSent.
	Eval(ctx context.Context, s *Script, keys Keys, args ...any) (any, error)

	// Listen opens one dedicated subscriber connection. Every message that
	// arrives on a channel subscribed through it is passed to deliver, from a
	// single goroutine, in order. When the connection fails, broken is called
	// once with the error and the Listener is dead; the core opens a new one.
	Listen(ctx context.Context, deliver func(channel, payload string), broken func(error)) (Listener, error)
}

// Listener is one subscriber connection opened by [Driver.Listen].
type Listener interface {
	// Subscribe subscribes to channel and returns once the server has
	// confirmed it, so every message published after Subscribe returns is
	// delivered.
	Subscribe(ctx context.Context, channel string) error
	// Unsubscribe unsubscribes from channel without waiting for the answer.
	Unsubscribe(channel string) error
	// Close closes the connection; broken is not called for it.
	Close() error
}

// Validator is implemented by a Driver built with options that can be
// wrong. The Locker constructors call Validate once and refuse the driver
// with its error, so a misconfigured driver fails where the Locker is
// built, not on its first call. The error should wrap ErrBadOption.
type Validator interface {
	Validate() error
}

// Driver-side sentinel errors. Package locker re-exports them under the
// same names (locker.ErrNotSent is ErrNotSent), so errors.Is works with
// either.
var (
	// ErrNotSent marks a Driver error for a call that never reached Redis:
	// no connection could be had (a failed dial, an exhausted pool, no free
	// call slot), or the context ended before anything was written. The core
	// then knows the call changed nothing and sends no clean-up for it.
	// Drivers wrap such errors with it, by [NotSent].
	ErrNotSent = errors.New("locker: call not sent")
	// ErrPoolExhausted: no connection could be taken from the client's pool.
	// A driver wraps it together with ErrNotSent.
	ErrPoolExhausted = errors.New("locker: connection pool exhausted")
	// ErrBadOption is wrapped by the error of a driver option with an
	// invalid value (see Validator); the message names the option.
	// keyexpr's Bind wraps the same value for a bad BindOption.
	ErrBadOption = optionerr.ErrBadOption
)

// Masters is implemented by a Driver whose deployment spreads keys over
// several masters (Redis Cluster). Masters returns one Driver per master,
// in a stable order (by address), each sending its calls to that master
// alone; the Locker uses them for calls that must visit every master
// (List). A Driver without it reaches one master.
type Masters interface {
	Masters(ctx context.Context) ([]Driver, error)
}

// Replicas is implemented by a Driver whose deployment has replicas a
// failover can promote (Sentinel, Cluster, a master with replicas).
// Replicas returns every replica the driver knows of, sorted by address;
// the Locker sends them only read-only scripts (Locker.Check and
// Locker.ServerFacts read their settings) and closes each Driver that
// implements io.Closer once done with it. A replica that does not answer
// fails those calls and is skipped. A Driver without it has no replicas
// checked: redigo's driver reaches one server and follows no failover.
type Replicas interface {
	Replicas(ctx context.Context) ([]Replica, error)
}

// Replica is one replica a [Replicas] driver lists.
type Replica struct {
	// Addr is its host:port, as its master (or the Cluster) names it.
	Addr string
	// Driver sends calls to this replica alone; nil when the driver has
	// no way to reach it (Err says why: no credentials to dial it with).
	Driver Driver
	// Err is why Driver is nil; the Locker reports the replica as not
	// checked.
	Err error
}
