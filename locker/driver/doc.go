// Package driver is the seam between locktag's lock core (package locker)
// and a Redis client. A driver does two things: run a Lua script on some
// keys ([Driver.Eval]) and listen on pub/sub channels ([Driver.Listen]).
// It imports nothing of locktag, so a driver for another client is a small
// package of its own; locker/redigo (the default, auto-pipelined unless
// set to pooled calls) and locker/goredis (Redis Cluster, Sentinel) are two.
//
// Build a Locker on a driver with locker.New (one Redis deployment) or
// locker.NewRedlock (N independent masters):
//
//	lk, err := locker.New(redigo.New(pool))
//
// # What a driver must get right
//
//   - Replies in the documented types ([Driver.Eval]).
//   - Every call bounded by its context's deadline.
//   - Calls that never reached Redis wrapped with [ErrNotSent], so the core
//     sends no clean-up for them; an empty pool also with [ErrPoolExhausted].
//   - Priority calls ([IsPriority]: renewals and releases of held leases)
//     not starved by an exhausted pool.
//   - A subscription confirmed before [Listener.Subscribe] returns, and a
//     broken subscriber connection reported, never silently re-made.
//
// Optional: [Validator] (options checked when the Locker is built),
// [Masters] (a Cluster's masters), [Replicas] (the replicas a failover may
// promote, whose settings Locker.Check reads), [Acker] (a script followed
// by WAIT on its own connection, for locker.WithReplicaAck), and io.Closer.
//
// Helpers a driver can build on: [Confirmations] and [KeepAlive] for a
// Listener, [NormalizeReply] and [NotSent] for Eval.
package driver
