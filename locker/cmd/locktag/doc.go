// Command locktag reads and repairs locktag's locks in Redis directly,
// for the operator on call when the service that owns them is down: it
// lists locks with their holders and waiters, rate keys and idempotency
// records (ls), shows one lock in full (inspect), force-releases a stuck
// lock as the ops page does (release), prints grants, releases and losses
// as they happen (watch), and checks what the server allows (check).
//
// It speaks the Redis protocol through package locker's own calls (List,
// Inspect, ForceRelease, Check ...), so it reads exactly what the library
// writes and refuses, by name, a record of another protocol. It reaches
// one server, a Cluster or a Sentinel set-up through go-redis.
//
// Install:
//
//	go install github.com/locktag/locktag/locker/cmd/locktag@latest
//
// Run locktag --help for the commands, their options, examples and exit
// statuses; docs/operations.md has the walk-through.
package main
