// Package examples shows locker/locktest testing a handler behind each of
// locktag's transports — net/http, Gin, gRPC over bufconn, connect — in
// each state: the lock held elsewhere, the lease lost, Redis down and
// back, a rate used up, an idempotency key completed or in flight.
//
// It is a module of its own so that locktest's module requires no
// transport: a service that tests with locktest pays only for the kit
// and miniredis.
package examples
