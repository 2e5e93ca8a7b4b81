// Package preflight is the start-up check (Locker.Check): before the first
// lock it asks one Redis deployment, as the user the Locker logs in as,
// whether it can serve the Locker. A deployment that cannot does not fail
// cleanly later. A refused script looks like an unreachable server, a
// PUBLISH that never arrives looks like a lock nobody releases, and an
// evicted lock key is granted to a second holder while the first one
// runs. So Check finds all of that up front and returns one error that
// names each missing piece and how to allow it.
//
// Check(ctx, nd) runs check.lua (scripts.CheckSource) on every master of
// the node (a Cluster's through driver.Masters) and verifies:
//
//   - script support: the script goes out under a comment naming this
//     Locker (Shared.CheckScript), so its first run meets NOSCRIPT and
//     takes the EVALSHA-then-EVAL path every lock call relies on. EVALSHA
//     or EVAL refused means scripting is off or denied to the user. The
//     server must be Redis 7.0 or Valkey 7.2 or later (SET … NX GET,
//     GETDEL, PXAT).
//   - ACL commands: every command the scripts call (scripts.Commands) is
//     tried with redis.acl_check_cmd on a key under the Locker's prefix
//     (PUBLISH on its channel). Commands denied to the user or unknown to
//     the server are named, with the ACL rule that allows them.
//   - clock reading: the script reads TIME, the server clock that fencing
//     tokens and lease ends are taken from. TIME denied or failing is
//     reported as a command the scripts cannot call.
//   - eviction policy: with a maxmemory set, any maxmemory-policy but
//     noeviction may evict a held lock's key, and the lock is then granted
//     again. Check refuses that with lockerr.ErrEvictionPolicy unless
//     Config.AllowEviction (WithEvictionAllowed), which reports it through
//     Hooks.Risk instead. When INFO is refused the policy cannot be read,
//     which is reported as a risk.
//   - persistence: appendonly off means a restart loses what was written
//     since the last snapshot. This is not a refusal: Check sets
//     Shared.AOFOff, and the Locker warns once when it hands out a fencing
//     token.
//   - pub/sub delivery: Check opens a subscriber connection of its own,
//     subscribes to a channel of this check and has each master's script
//     PUBLISH on it, then waits for every message. Waiters are woken this
//     way, so a SUBSCRIBE refused (the channels to allow include
//     ListenerChannels) or a message that never arrives (a proxy that does
//     not forward pub/sub) is refused.
//   - replicas: a failover promotes a replica with its settings. facts.lua
//     (no-writes, allow-stale) runs on every replica the driver lists
//     (driver.Replicas), and an evicting policy there is refused as it is
//     on a master. A replica the driver cannot reach, or whose settings
//     this user may not read, is a risk (Hooks.Risk). One that does not
//     answer is skipped (Hooks.Skipped): while it is down it cannot be
//     promoted with the locks' data.
//
// Check returns a driver's error when a node did not answer, or one
// wrapping lockerr.ErrUnsupported (lockerr.ErrEvictionPolicy for an
// evicting policy) that lists every problem found. Failed turns a
// backend's joined errors into what Locker.Check returns: it matches
// lockerr.ErrUnavailable unless every part is an ErrUnsupported.
//
// Ping(ctx, nd) is the health check. It runs Check until Check has passed
// once on the node (backend.Node.Capable, which Check sets), and after
// that a trivial script. A start-up Ping or the first health checks
// therefore find a server that cannot serve the locker, and later health
// checks cost one call. ReadFacts reads what INFO says on every master and
// replica (Locker.ServerFacts) with the same scripts, writing and
// publishing nothing.
//
// The check is kept apart from package backend, the seam every backend
// shares: it imports backend for Node and Shared, and backend imports
// nothing of it. The backends (single, quorum) call Check and Ping here
// for every node they run on.
package preflight
