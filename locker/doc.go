// Package locker provides distributed locks on Redis done right: owner
// tokens, one round trip per operation, reentrancy carried in a
// context.Context, fencing tokens, a watchdog that renews the lease and
// cancels the holder's context if the lock is lost, and first-come-first-
// served waiting by notification instead of polling.
//
// Build one Locker per process on a driver, and take a lock with
// [Locker.Obtain] and release it with [Lease.Release]:
//
//	lk, err := locker.New(redigo.New(pool)) // package locker/redigo
//	if err != nil {
//		return err // an invalid option: errors.Is(err, locker.ErrBadOption)
//	}
//
//	lease, err := lk.Obtain(ctx, "order:42", locker.Params{Wait: 2 * time.Second})
//	if err != nil {
//		return err // errors.Is(err, locker.ErrNotObtained) when busy
//	}
//	defer lease.Release(ctx)
//	ctx = lease.Context() // cancelled with cause ErrLockLost if the lock is lost
//
// # Drivers and backends
//
// This package imports no Redis client. It talks to Redis through the small
// seam in package locker/driver; locker/redigo (the default, auto-pipelined
// over one connection unless set to pooled calls) and locker/goredis (Redis Cluster, Sentinel) implement
// it. [New] keeps locks on one Redis deployment, with a first-come-first-
// served queue in Redis; [NewRedlock] keeps them on N independent masters by
// quorum. Both are implementations of one internal backend interface, and
// leases and idempotency claims are kept alive by one renewal engine
// (docs/architecture.md#inside-locker).
//
// # Redis layout
//
// A lock named K is a string at prefix+"{K}" (owner token, fencing token,
// hold count, waiting flag) with the lease as its expiry. Its fencing
// counter, waiter queue, waiter details and channel use the same hash tag,
// so all of them share one Redis Cluster slot. Every operation is a single
// Lua script run by SHA.
//
// # Waiting
//
// A busy Obtain with Params.Wait > 0 joins a queue in Redis in the same
// round trip. Release hands the lock straight to the head of the queue and
// publishes that on the key's channel; each Locker listens through one
// shared subscriber connection and wakes exactly the waiter named. New
// callers queue behind waiters, so the order is first come, first served
// across processes. A hand-over is reserved for its waiter only for a grant
// window (WithGrantWindow) until the waiter confirms it, so a waiter that
// has gone costs the others that window, never a whole lease.
//
// # Fencing
//
// Every new holder gets a fencing token ([Lease.Token]) larger than every
// earlier holder's, including across a Redis restart without persistence:
// the token is the larger of the stored counter plus one and the Redis
// server clock in microseconds. The protected side must check the token on
// every access the result depends on: for a read-modify-write, claim the
// resource with the token before reading it and check the claim with the
// write ([Fence.Claim], [Fence.Check], [Fenced]); fencing only the write
// ([Fence.Admit]) protects blind writes, not a read-modify-write.
package locker
