package goredis

import (
	"context"
	"sort"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/locktag/locktag/locker/driver"
)

// Replicas lists the deployment's replicas, sorted by address
// (driver.Replicas): a Cluster's, on the cluster client's own connections
// to them; a plain or Sentinel client's, those its master's INFO
// replication names, each on a client of its own made with the client's
// options, which the replica's driver closes.
func (d *redisDriver) Replicas(ctx context.Context) ([]driver.Replica, error) {
	switch c := d.c.(type) {
	case *redis.ClusterClient:
		return d.clusterReplicas(ctx, c)
	case *redis.Client:
		info, err := c.Info(ctx, "replication").Result()
		if err != nil {
			return nil, err
		}
		o := c.Options()
		var out []driver.Replica
		for _, addr := range driver.ReplicaAddrs(info) {
			rc := redis.NewClient(replicaOptions(o, addr))
			out = append(out, driver.Replica{Addr: addr, Driver: ownedDriver{&redisDriver{c: rc, ctxAware: o.ContextTimeoutEnabled}}})
		}
		return out, nil
	}
	return nil, nil // a Ring: shards, no failover
}

// clusterReplicas returns a driver per replica of c's masters, sorted by
// address. Each shares the cluster's connections to its node; a node's
// client takes EVALSHA with no keys as it is, without READONLY.
func (d *redisDriver) clusterReplicas(ctx context.Context, c *redis.ClusterClient) ([]driver.Replica, error) {
	var mu sync.Mutex
	var nodes []*redis.Client
	err := c.ForEachSlave(ctx, func(_ context.Context, n *redis.Client) error {
		mu.Lock()
		nodes = append(nodes, n)
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Options().Addr < nodes[j].Options().Addr })
	out := make([]driver.Replica, len(nodes))
	for i, n := range nodes {
		out[i] = driver.Replica{Addr: n.Options().Addr, Driver: &redisDriver{c: n, ctxAware: d.ctxAware}}
	}
	return out, nil
}

// failoverAddr is the address go-redis gives a Sentinel client's options
// (FailoverOptions): its dialer asks the sentinels for the master instead.
const failoverAddr = "FailoverClient"

// replicaOptions are the options of a client for the replica at addr,
// made from a plain or Sentinel client's options o: the same credentials,
// database, TLS and timeouts; one connection, no retries. A Sentinel
// client's dialer is left out (it dials the master, whatever the
// address); a plain client's is kept, since it dials the address given.
// Only what these fields name is copied: the options hold state a client
// writes to (go-redis' maintenance notifications), which a second client
// must not share.
func replicaOptions(o *redis.Options, addr string) *redis.Options {
	r := &redis.Options{
		Network:                      "tcp",
		Addr:                         addr,
		ClientName:                   o.ClientName,
		OnConnect:                    o.OnConnect,
		Protocol:                     o.Protocol,
		Username:                     o.Username,
		Password:                     o.Password,
		CredentialsProvider:          o.CredentialsProvider,
		CredentialsProviderContext:   o.CredentialsProviderContext,
		StreamingCredentialsProvider: o.StreamingCredentialsProvider,
		DB:                           o.DB,
		MaxRetries:                   -1,
		DialTimeout:                  o.DialTimeout,
		ReadTimeout:                  o.ReadTimeout,
		WriteTimeout:                 o.WriteTimeout,
		ContextTimeoutEnabled:        o.ContextTimeoutEnabled,
		PoolSize:                     1,
		TLSConfig:                    o.TLSConfig,
		DisableIdentity:              o.DisableIdentity,
		IdentitySuffix:               o.IdentitySuffix,
	}
	if o.Addr != failoverAddr {
		r.Dialer = o.Dialer
	}
	return r
}

// ownedDriver is a driver on a client it made for one replica: closing
// the driver closes the client.
type ownedDriver struct{ *redisDriver }

func (d ownedDriver) Close() error { return d.c.Close() }
