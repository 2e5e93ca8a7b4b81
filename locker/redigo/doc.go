// Package redigo is locktag's default Redis driver, on a
// github.com/gomodule/redigo connection pool:
//
//	pool := &redis.Pool{
//		MaxIdle: 64,
//		DialContext: func(ctx context.Context) (redis.Conn, error) {
//			return redis.DialContext(ctx, "tcp", "localhost:6379",
//				redis.DialReadTimeout(2*time.Second), redis.DialWriteTimeout(2*time.Second))
//		},
//	}
//	lk, err := locker.New(redigo.New(pool))
//
// Scripts run by EVALSHA with an EVAL fallback on NOSCRIPT, with the call
// context's deadline as the socket timeout (DoWithTimeout: no goroutine per
// call). One dedicated connection, dialled with the pool's Dial, carries
// every subscription of the Locker; it stays subscribed to a private
// keep-alive channel and is pinged every 10s, and a connection that
// answers nothing for 30s is reported broken.
//
// # Priority calls
//
// When the pool's MaxActive is reached, a renewal or release of a held
// lease (driver.IsPriority) runs on one reserved connection instead of
// waiting for a pooled one: a burst of requests must not cost a healthy
// holder its lock. The reserved connection is dialled on first need and
// closed by the Locker's Close.
//
// # Pipelining
//
// WithPipelining(n) multiplexes every call onto n long-lived connections
// with auto-pipelining; see its documentation for when it pays.
package redigo
