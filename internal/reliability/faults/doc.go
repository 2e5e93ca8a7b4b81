// Package faults is locktag's fault-injection tooling for tests: it breaks
// the things a distributed lock depends on, on one machine and loopback only.
//
//   - Proxy: an embedded toxiproxy (github.com/Shopify/toxiproxy/v2, run
//     in-process) between a client and redis-server, with latency, timeout
//     (a black hole), reset_peer and bandwidth toxics, and Partition/Heal
//     that drop every connection through it.
//   - Child: a holder in a separate OS process — the test binary run again
//     with -test.run=^TestHelperProcess$ — that can be SIGKILLed (a crash),
//     SIGSTOPped and SIGCONTed (a long GC pause or a frozen VM), and talks to
//     the test over its stdin and stdout, one line per message.
//   - ClientPause: Redis's own CLIENT PAUSE, which stalls every client.
//   - StartSecure and NewCerts: a redis-server that speaks TLS only (with a CA
//     and a server certificate generated in the test) and/or requires a
//     password; ACLSetUser adds an ACL user.
//
// Killing and restarting redis-server itself is redistest's Stop and
// Restart. Nothing here is used outside tests.
package faults
