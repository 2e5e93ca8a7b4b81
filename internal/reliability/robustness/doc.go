// Package robustness is locktag's history-checking suite, in the style of
// Jepsen and etcd's robustness tests. It has no code outside its tests; see
// docs/reliability.md#robustness-histories-checked-against-models.
//
// Worker processes (the test binary run again, as in the fault suite) take
// locks, run idempotent requests and ask for rate decisions against real
// redis-server (or valkey-server) processes, and record every operation —
// acquire, fenced read, fenced write, release, idempotent request, rate
// decision — with its call and
// return times on one clock shared by all processes, and operations whose
// outcome is unknown (a process killed, a reply lost) as such. A nemesis
// drawn from a seed breaks things meanwhile: it pauses or kills the lock's
// holder, pauses, kills and restarts Redis (with and without an append-only
// file), blackholes, delays and drops connections through a proxy, fills
// Redis's memory under each maxmemory-policy, cuts a replica off before a
// Sentinel failover, and moves a held lock's Cluster slot. The same seed
// gives the same schedule.
//
// Each history is checked with porcupine (github.com/anishathalye/porcupine)
// against four models: a lock with a fenced register (fencing tokens only
// grow; a read returns the last write; a read or write with a token older
// than one the register has seen is refused), the same with mutual
// exclusion while a lease is valid, exactly-once execution of idempotent
// requests, and GCRA for rate decisions. A history that is not linearizable is saved with
// porcupine's visualisation. Every nemesis has a control — an unfenced
// register, a naive lock, Redis without its append-only file, the eviction
// guardrail switched off, no replica acknowledgement, a slot move that
// loses its keys — that must produce an illegal history in at least nine
// seeds of ten, so the checks are shown to be able to fail.
//
//	go test ./robustness -run TestRobustness -v                        # CI size
//	SEEDS=10 DURATION=30s go test ./robustness -run TestRobustness -v -timeout 3h
//	SEED=7 NEMESIS=holder go test ./robustness -run TestRobustness -v  # replay one seed
package robustness
