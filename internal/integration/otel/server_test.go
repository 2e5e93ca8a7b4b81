package otel_test

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/locktag/locktag/internal/lockertest"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/lockotel"
	"github.com/locktag/locktag/locker/redigo"
)

// TestObserveServer: lockotel.ObserveServer reports the master's evicted
// keys, whether it may evict a held lock (with its policy) and whether it
// has an append-only file, read at each collection, with its role.
func TestObserveServer(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	lk := newLocker(t, srv, locker.WithEvictionAllowed())
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(ctx) })
	reg, err := lockotel.ObserveServer(lk, lockotel.WithMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Unregister() })

	// point returns the value and attributes of metric name's one point.
	point := func(name string) (int64, attribute.Set) {
		t.Helper()
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(ctx, &rm); err != nil {
			t.Fatal(err)
		}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if m.Name != name {
					continue
				}
				switch d := m.Data.(type) {
				case metricdata.Sum[int64]:
					if len(d.DataPoints) == 1 {
						return d.DataPoints[0].Value, d.DataPoints[0].Attributes
					}
				case metricdata.Gauge[int64]:
					if len(d.DataPoints) == 1 {
						return d.DataPoints[0].Value, d.DataPoints[0].Attributes
					}
				}
				t.Fatalf("%s: %+v, want one point", name, m.Data)
			}
		}
		t.Fatalf("no %s", name)
		return 0, attribute.Set{}
	}
	if v, attrs := point("locktag.redis.eviction"); v != 0 || attrs.Len() != 3 {
		t.Fatalf("eviction %d %v, want 0 with server, role and policy", v, attrs.ToSlice())
	} else if r, _ := attrs.Value(lockotel.AttrRole); r.AsString() != "master" {
		t.Fatalf("role %q, want master", r.AsString())
	}
	if v, _ := point("locktag.redis.aof"); v != 0 {
		t.Fatalf("aof %d, want 0 (the test server has none)", v)
	}
	if v, _ := point("locktag.redis.evicted_keys"); v != 0 {
		t.Fatalf("evicted_keys %d, want 0", v)
	}

	if _, err := srv.Do("CONFIG", "SET", "maxmemory", "4mb", "maxmemory-policy", "allkeys-lru"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = srv.Do("CONFIG", "SET", "maxmemory", "0", "maxmemory-policy", "noeviction") })
	value := strings.Repeat("x", 64<<10)
	for i := range 200 {
		if _, err := srv.Do("SET", fmt.Sprint("fill:", i), value); err != nil {
			t.Fatal(err)
		}
	}
	if v, attrs := point("locktag.redis.eviction"); v != 1 {
		t.Fatalf("eviction %d %v, want 1", v, attrs.ToSlice())
	} else if p, _ := attrs.Value(lockotel.AttrPolicy); p.AsString() != "allkeys-lru" {
		t.Fatalf("policy %q", p.AsString())
	}
	if v, _ := point("locktag.redis.evicted_keys"); v == 0 {
		t.Fatal("evicted_keys 0 after filling 12.5 MB into 4 MB")
	}
}

// TestObserveServerReplica: a replica the Locker's driver lists
// (driver.Replicas; here a real one, redis-server --replicaof) is
// reported beside the master, by its address and the role replica.
func TestObserveServerReplica(t *testing.T) {
	ctx := context.Background()
	master := redistest.Start(t)
	host, port, _ := strings.Cut(master.Addr(), ":")
	replica := redistest.Start(t, redistest.WithArgs("--replicaof", host, port, "--maxmemory", "1gb", "--maxmemory-policy", "allkeys-lru"))
	pool := replica.Pool(t)
	lk := lockertest.NewLockerOn(t, lockertest.WithReplicas(redigo.New(master.Pool(t)), func() []driver.Replica {
		return []driver.Replica{{Addr: replica.Addr(), Driver: redigo.New(pool)}}
	}), locker.WithEvictionAllowed())
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(ctx) })
	reg, err := lockotel.ObserveServer(lk, lockotel.WithMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Unregister() })
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{} // role server policy: value
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if g, ok := m.Data.(metricdata.Gauge[int64]); ok && m.Name == "locktag.redis.eviction" {
				for _, p := range g.DataPoints {
					role, _ := p.Attributes.Value(lockotel.AttrRole)
					server, _ := p.Attributes.Value(lockotel.AttrServer)
					policy, _ := p.Attributes.Value(lockotel.AttrPolicy)
					got[role.AsString()+" "+server.AsString()+" "+policy.AsString()] = p.Value
				}
			}
		}
	}
	want := map[string]int64{"master 0 noeviction": 0, "replica " + replica.Addr() + " allkeys-lru": 1}
	if !maps.Equal(got, want) {
		t.Fatalf("locktag.redis.eviction = %v, want %v", got, want)
	}
}
