// Package conformance is one table of behaviours that every locktag
// transport adapter — Gin, net/http, gRPC, connect — must show, run on a
// real redis-server. Each adapter's tests plug in with a small Transport
// driver ("serve this tag or guard with this handler; make this request;
// read the outcome") and call Run.
//
// The table: one key serialises (an overlap detector, with a control that
// breaks the lock and must be caught); distinct keys run in parallel; busy
// after the wait is the transport's busy status with a retry hint; Redis
// down is unavailable and the handler never runs; a missing, empty or
// over-long key value is invalid before Redis is touched; one id names
// one lock — "conf:id:"+keyexpr.Escape(id), the name docs/keys.md gives
// for a lock taken by hand, which then makes the route busy — for ids
// with spaces, encoded slashes, pluses, percents and 200 bytes of
// non-ASCII, through the request field every transport reads and, on
// HTTP transports (PathTransport), through a path parameter under each
// router configuration, where a malformed escape is invalid; a lock lost
// mid-handler cancels the handler's context with locker.ErrLockLost and is
// answered with a retry hint; a panic releases the lock; a rate tag admits
// its burst and refuses the next as rate-limited with the time to the
// next slot and the quota (with a control that breaks the limit), and
// chained before a lock tag refuses without queueing for the lock;
// idempotency runs
// a handler exactly once under 50 concurrent duplicates through 5 Lockers,
// replays byte-identically, refuses a reused key and keeps scopes apart;
// Redis down under an idempotency guard is unavailable with a retry hint.
//
// Statuses are compared as transport-neutral classes (Status), read from
// what a client sees: the HTTP status and problem type, or the RPC code and
// its google.rpc.ErrorInfo reason (ClassifyHTTP, ClassifyRPC).
package conformance
