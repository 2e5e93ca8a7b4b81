// Package redigo is locktag's default Redis driver, on a
// github.com/gomodule/redigo connection pool:
//
//	pool := &redis.Pool{
//		DialContext: func(ctx context.Context) (redis.Conn, error) {
//			return redis.DialContext(ctx, "tcp", "localhost:6379",
//				redis.DialReadTimeout(2*time.Second), redis.DialWriteTimeout(2*time.Second))
//		},
//	}
//	lk, err := locker.New(redigo.New(pool))
//
// Scripts run by EVALSHA with an EVAL fallback on NOSCRIPT. One dedicated
// connection, dialled with the pool's Dial, carries every subscription of
// the Locker; it stays subscribed to a private keep-alive channel and is
// pinged every 10s, and a connection that answers nothing for 30s is
// reported broken.
//
// # Pipelining (the default)
//
// Script calls are multiplexed onto two long-lived connections, dialled
// with the pool's Dial, with auto-pipelining: concurrent calls share one
// write and one read on both ends of the first connection's socket, and a
// call that finds that connection busy with a single call takes the second,
// so that two callers taking turns with Redis do not wait on each other.
// Each caller waits no longer than its context's deadline; a connection
// silent for the stall timeout (WithStallTimeout) while calls are in flight
// is closed and the next call dials a new one. The pool's MaxActive and
// MaxIdle do not bound them: the pool only dials. WithPipelining(n) uses n
// connections.
//
// # Pooled calls and priority calls
//
// WithPipelining(0) takes a connection from the pool per call, with the
// call context's deadline as the socket timeout (DoWithTimeout: no
// goroutine per call). When the pool's MaxActive is reached, a renewal or
// release of a held lease (driver.IsPriority) runs on one reserved
// connection instead of waiting for a pooled one: a burst of requests must
// not cost a healthy holder its lock. The reserved connection is dialled on
// first need and closed by the Locker's Close.
package redigo
