// Package goredis runs locktag's locks on Redis Cluster and Redis Sentinel
// through github.com/redis/go-redis/v9: it adapts a go-redis
// [redis.UniversalClient] to the [driver.Driver] seam (package
// github.com/locktag/locktag/locker/driver), and imports nothing else of
// locktag.
//
//	rdb := redis.NewUniversalClient(&redis.UniversalOptions{
//		Addrs:                 []string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"},
//		ContextTimeoutEnabled: true,
//	})
//	lk, err := locker.New(goredis.New(rdb))
//	if err != nil {
//		return err
//	}
//	defer lk.Close()
//
// go-redis does the routing: a [redis.ClusterClient] sends each script to
// the master of its keys' slot (all keys of one lock share the hash tag
// {K}, so one lock lives on one master) and follows MOVED and ASK
// redirections; a failover client ([redis.NewFailoverClient], or
// UniversalOptions with MasterName) asks the sentinels for the current
// master and follows failovers. A plain [redis.Client] works too. The
// core package imports no Redis client; only programs that import this
// package depend on go-redis.
//
// # Scripts
//
// Eval runs a script by EVALSHA and, on NOSCRIPT, by EVAL, which also loads
// it. In a Cluster each master has its own script cache, so the first call
// for a slot on each master (and the first after a failover or a SCRIPT
// FLUSH) costs one extra round trip. Replies are normalised as the Driver
// contract asks (int64, string, []any, nil); a nil reply (go-redis's
// redis.Nil) is a nil value, not an error. When the client's pool has no
// free connection in time (redis.ErrPoolTimeout, redis.ErrPoolExhausted)
// the error matches [driver.ErrPoolExhausted] (locker.ErrPoolExhausted).
//
// Eval honours ctx. With ContextTimeoutEnabled set in the client's options
// the deadline reaches the socket directly; without it go-redis would
// ignore the deadline and block for its ReadTimeout, so the driver waits
// for the reply on a separate goroutine and returns ctx.Err() when ctx
// ends first (the command then finishes, or times out, in the
// background). Set ContextTimeoutEnabled: it is cheaper.
//
// go-redis retries a command whose connection failed (MaxRetries, default
// 3). A script that had already run before the failure then runs twice;
// the locker treats every failed or doubtful call as "maybe held" and
// cleans up by owner token, but a retried acquire can leave the lock held
// until its lease ends. Set MaxRetries to -1 to hand every failure to the
// locker instead; failover errors such as READONLY and CLUSTERDOWN then
// surface as locker.ErrUnavailable until the client has found the new
// master.
//
// # Connections and pipelining
//
// On a [redis.Client] (plain or Sentinel) whose pool has at least 4
// connections, the driver holds up to two of them ([redis.Client.Conn])
// instead of taking a pooled connection per call. A call that finds one
// free sends its script on it at once; calls that arrive while both are
// busy queue, and the next connection to come free sends them all as one
// pipeline: under concurrency one write and one read serve many calls, on
// both sides of the socket, and a lone call skips the pool's per-call
// health check. A batch runs with the earliest deadline of its calls; a
// call still queued when its context ends returns an error wrapping
// driver.ErrNotSent (nothing was sent).
//
// A held connection goes back to the pool after a second unused or three
// seconds held, and on the Locker's Close (the client itself stays open;
// later calls go through it one command at a time). So the pool's checks
// keep running, and hooks added to the client apply to the driver's calls
// within seconds (a held connection runs the hooks the client had when it
// was taken). Batched calls reach hooks as pipelines
// (ProcessPipelineHook), a lone call as a command. A call on a held
// connection that the client closed underneath (as a Sentinel failover
// does) was never written and is sent again on another; a connection the
// server closed fails the call on it, as a call in flight would fail.
//
// A Cluster client (and a pool under 4) keeps go-redis's own path: one
// command per call on a pooled connection, which the client routes.
//
// # Replicas
//
// Locker.Check and Locker.ServerFacts read the eviction policy of every
// replica a failover may promote (driver.Replicas): a Cluster client's
// replicas over its own connections to them; a Sentinel or plain client's,
// as its master's INFO replication names them, each over one connection
// opened for the call with the client's options (not a Sentinel client's
// dialer, which dials the master) and closed after it. The calls are one
// read-only script each.
//
// # Pub/sub
//
// Listen opens one go-redis [redis.PubSub] with classic SUBSCRIBE. A
// PUBLISH (also one made by a Lua script) reaches subscribers on every node
// of a Cluster over the cluster bus, so the subscriber connection may live
// on any node; Listen picks one at random through a private keep-alive
// channel, which spreads the listeners of many processes over the nodes.
// Subscribe returns only after the server's confirmation.
//
// go-redis reconnects a PubSub by itself when its connection fails and
// subscribes again, but messages published in between are lost and nobody
// is told. The driver does not let that happen silently: the first error
// on the connection (a failed read or write, a missing answer to the
// periodic PING, a reconnect) closes the PubSub and calls broken, so the
// locker opens a new Listener and every waiter re-subscribes and re-checks
// the lock.
package goredis
