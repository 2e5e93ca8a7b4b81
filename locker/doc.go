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
// This package imports no Redis client: locker/redigo (the default,
// auto-pipelined) and locker/goredis (Cluster, Sentinel) implement the
// seam in locker/driver. [New] keeps locks on one Redis deployment, with a
// first-come-first-served queue in Redis; [NewRedlock] keeps them on N
// independent masters by quorum (docs/architecture.md#inside-locker).
//
// Every operation is one Lua script; a waiting Obtain is handed the lock
// on release, notified through one shared subscriber connection; every
// holder gets a fencing token ([Lease.Token]) larger than every earlier
// holder's, for the protected side to check ([Fence], [Fenced]). See
// docs/locking.md.
package locker
