package lockotel

import (
	"context"
	"strconv"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/locktag/locktag/locker"
)

// Attribute keys of the server metrics (ObserveServer).
const (
	// AttrServer is a master's position in Locker.ServerFacts' order,
	// "0", "1", …: stable while the deployment's masters stay the same;
	// a replica's host:port.
	AttrServer = attribute.Key("locktag.redis.server")
	// AttrRole is "master", or "replica" for a replica a failover may
	// promote (driver.Replicas).
	AttrRole = attribute.Key("locktag.redis.role")
	// AttrPolicy is a server's maxmemory-policy.
	AttrPolicy = attribute.Key("locktag.redis.maxmemory_policy")
)

// ObserveServer reports what the Redis masters and replicas behind lk say
// about the settings a lock's guarantees depend on
// (locker.Locker.ServerFacts), read on each collection with one script
// call per server, by AttrServer and AttrRole: locktag.redis.evicted_keys
// (counter), locktag.redis.eviction (gauge, 1 where a server may evict a
// held lock's key, with AttrPolicy) and locktag.redis.aof (gauge, 1 where
// appendonly is on). A server whose INFO is refused to the user reports
// nothing. Of opts, WithMeterProvider applies (the default is the global
// provider). Call the returned Registration's Unregister when lk is
// closed. See docs/observability.md#metrics.
func ObserveServer(lk *locker.Locker, opts ...Option) (metric.Registration, error) {
	o, err := evaluateOptions(opts)
	if err != nil {
		return nil, err
	}
	mp := o.meterProvider
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m := mp.Meter(ScopeName, metric.WithInstrumentationVersion(moduleVersion))
	evicted, err := m.Int64ObservableCounter("locktag.redis.evicted_keys", metric.WithUnit("{key}"),
		metric.WithDescription("Keys the Redis server evicted since it started (INFO stats evicted_keys)."))
	if err != nil {
		return nil, err
	}
	eviction, err := m.Int64ObservableGauge("locktag.redis.eviction", metric.WithUnit("{flag}"),
		metric.WithDescription("1 where the Redis server may evict a held lock's key (a maxmemory with a policy but noeviction), else 0."))
	if err != nil {
		return nil, err
	}
	aof, err := m.Int64ObservableGauge("locktag.redis.aof", metric.WithUnit("{flag}"),
		metric.WithDescription("1 where the Redis server has appendonly on, else 0."))
	if err != nil {
		return nil, err
	}
	return m.RegisterCallback(func(ctx context.Context, ob metric.Observer) error {
		facts, _ := lk.ServerFacts(ctx) // what answered; an outage shows in the lock metrics
		for i, f := range facts {
			if !f.Known {
				continue
			}
			server, role := AttrServer.String(strconv.Itoa(i)), AttrRole.String("master")
			if f.Replica {
				server, role = AttrServer.String(f.Addr), AttrRole.String("replica")
			}
			ob.ObserveInt64(evicted, f.EvictedKeys, metric.WithAttributes(server, role))
			ob.ObserveInt64(eviction, b2i(f.Evicting()), metric.WithAttributes(server, role, AttrPolicy.String(f.Policy)))
			ob.ObserveInt64(aof, b2i(f.AOF), metric.WithAttributes(server, role))
		}
		return nil
	}, evicted, eviction, aof)
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
