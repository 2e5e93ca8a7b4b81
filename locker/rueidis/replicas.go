package rueidis

import (
	"context"
	"errors"

	"github.com/redis/rueidis"

	"github.com/locktag/locktag/locker/driver"
)

// errNoOptions is why a driver made by New reaches no replica of a
// Sentinel set-up or a single master: rueidis keeps connections to the
// master alone there, and a client given to New carries no options to
// dial another server with.
var errNoOptions = errors.New("lockrueidis.New's client carries no options to dial it with: make the driver with lockrueidis.NewFromOption")

// Replicas lists the deployment's replicas, sorted by address
// (driver.Replicas): a Cluster's, on the cluster client's own connections
// to them; a Sentinel set-up's or a single master's, those the master's
// INFO replication names, each on a client of its own made from the
// driver's options (NewFromOption) on the first call and closed with the
// replica's driver. A driver made by New lists those with no driver.
func (d *rueidisDriver) Replicas(ctx context.Context) ([]driver.Replica, error) {
	c, err := d.src.client(ctx)
	if err != nil {
		return nil, driver.NotSent(err)
	}
	if c.Mode() == rueidis.ClientModeCluster {
		return clusterReplicas(ctx, c)
	}
	info, err := c.Do(ctx, c.B().Info().Section("replication").Build()).ToString()
	if err != nil {
		return nil, err
	}
	addrs := driver.ReplicaAddrs(info)
	out := make([]driver.Replica, len(addrs))
	l, ok := d.src.(*lazy)
	for i, a := range addrs {
		out[i].Addr = a
		if !ok {
			out[i].Err = errNoOptions
			continue
		}
		out[i].Driver = &rueidisDriver{src: newLazy(replicaOption(l.opt, a))}
	}
	return out, nil
}

// replicaOption is opt for one server, the replica at addr: the same
// credentials, TLS, dialer and timeouts, without the Sentinel, the
// replica routing and client-side caching.
func replicaOption(opt rueidis.ClientOption, addr string) rueidis.ClientOption {
	opt.InitAddress = []string{addr}
	opt.Sentinel = rueidis.SentinelOption{}
	opt.Standalone = rueidis.StandaloneOption{}
	opt.ForceSingleClient = true
	opt.ReplicaOnly = false
	opt.SendToReplicas = nil
	opt.DisableCache = true
	opt.OnInvalidations = nil
	opt.BlockingPoolMinSize = 0
	return opt
}

// clusterReplicas returns a driver per replica the Cluster's slot map
// names (CLUSTER SLOTS), sorted by address, each on the cluster client's
// connection to it. One the client has no connection to yet (the map
// just changed) fails its calls as a replica that does not answer.
func clusterReplicas(ctx context.Context, c rueidis.Client) ([]driver.Replica, error) {
	_, addrs, err := slotNodes(ctx, c)
	if err != nil {
		return nil, err
	}
	nodes := c.Nodes()
	out := make([]driver.Replica, len(addrs))
	for i, a := range addrs {
		out[i].Addr = a
		if n, ok := nodes[a]; ok {
			out[i].Driver = &rueidisDriver{src: fixed{n}}
		} else {
			out[i].Driver = invalid{errors.New("rueidis: the cluster client has no connection to replica " + a)}
		}
	}
	return out, nil
}
