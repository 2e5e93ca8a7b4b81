// Package multi is the orchestration of locker.ObtainMany over any
// per-key lease type: the keys deduplicated and sorted (one global order,
// so callers naming the same keys in any order cannot deadlock), the
// one-script path when all are free, else key by key within one wait
// budget with a rollback on failure, and the parts released together.
// See docs/locking.md#multi-key-locks.
package multi
