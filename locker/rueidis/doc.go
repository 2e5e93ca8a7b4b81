// Package rueidis runs locktag's locks through github.com/redis/rueidis: it
// adapts a rueidis client to the [driver.Driver] seam (package
// github.com/locktag/locktag/locker/driver) and imports nothing else of
// locktag. One driver serves a single server, a Redis Cluster and a
// Sentinel set-up, whichever client rueidis.NewClient made. The package
// has rueidis' own name; import it as, say, lockrueidis:
//
//	import lockrueidis "github.com/locktag/locktag/locker/rueidis"
//
//	c, err := rueidis.NewClient(rueidis.ClientOption{
//		InitAddress: []string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"},
//	})
//	if err != nil {
//		return err
//	}
//	defer c.Close()
//	lk, err := locker.New(lockrueidis.New(c))
//
// rueidis does the routing and the failovers: a Cluster client sends each
// script to the master of its keys' slot (all keys of one lock share the
// hash tag {K}) and follows MOVED and ASK; with ClientOption.Sentinel
// (MasterSet, InitAddress naming the sentinels) the client asks the
// sentinels for the master and switches when they promote another.
// [NewFromOption] makes the client itself on first use, so a service can
// start while Redis is down.
//
// # Scripts
//
// Eval sends EVALSHA with the script's SHA1 (driver.Script carries it, so
// no rueidis.Lua per script is kept) and, on NOSCRIPT, EVAL, which also
// loads it: the first call on each master, and the first after a restart
// or a SCRIPT FLUSH, costs one round trip more. Calls are auto-pipelined,
// rueidis' default: concurrent calls share writes and reads on a few
// connections per node (ClientOption.PipelineMultiplex), with no pool to
// exhaust. rueidis retries only read-only commands, so a script never runs
// twice because a connection failed. Replies are converted as the Driver
// contract asks (int64, string, []any, nil; RESP3 booleans as RESP2 has
// them); a nil reply is a nil value. Each call is bounded by its context;
// one whose connection could not be made, or whose context had ended,
// wraps [driver.ErrNotSent].
//
// # Replicas
//
// Locker.Check and Locker.ServerFacts read the eviction policy of every
// replica a failover may promote (driver.Replicas): a Cluster client's
// replicas over its own connections to them; on a Sentinel set-up or a
// single master, those its INFO replication names, each over a client
// made for the call from NewFromOption's options and closed after it. A
// client given to New carries no options to dial them with: Check then
// lists each such replica as a risk (Locker.Risks), not checked.
//
// # Pub/sub
//
// Listen takes one dedicated connection (Client.Dedicate) for every
// subscription of the Locker, with classic SUBSCRIBE, and reads it through
// rueidis' pub/sub hooks. It does not put the subscriptions on the shared
// auto-pipelined connection, although RESP3 push messages would allow it:
// a subscriber connection must report its end once and never be re-made
// silently (messages published meanwhile would be lost), and rueidis
// reconnects its shared connections by itself; a killed or stalled
// subscriber connection must not fail the script calls in flight; and a
// dedicated connection works on RESP2 (ClientOption.AlwaysRESP2) too.
// rueidis pings the idle connection (every Dialer.KeepAlive, 1s by
// default) and ends it when an answer takes longer than
// ConnWriteTimeout (10s by default); the driver then tells the locker,
// which opens a new Listener, and every waiter subscribes again and
// re-checks its lock.
//
// Client-side caching (RESP3 invalidations) would not serve the wake-ups:
// a release's message names the waiter it hands the lock to, which an
// invalidation of the lock key cannot carry, and every driver wakes its
// waiters from the same scripts' PUBLISH. The driver issues no cached
// commands; ClientOption.DisableCache only spares the CLIENT TRACKING
// command on each new connection.
//
// A PUBLISH (also one made by a script) reaches subscribers on every node
// of a Cluster over the cluster bus, so the subscriber connection may live
// on any node; Listen's private keep-alive channel puts it on a random one,
// and Listen tries another when the one rueidis picked cannot be dialled
// (a replica that is down).
package rueidis
