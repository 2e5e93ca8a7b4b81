package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/bsm/redislock"
	"github.com/gomodule/redigo/redis"
	"github.com/locktag/locktag/locker"
	goredis "github.com/redis/go-redis/v9"
)

// clusterMasters is the size of the Cluster the cluster scenario starts.
const clusterMasters = 3

// startCluster starts a Redis Cluster of masters masters, no replicas, on
// loopback: redis-servers with cluster-enabled, each with a cluster bus
// port of its own, joined by `redis-cli --cluster create`. It returns once
// every node serves all 16384 slots and knows every other node, and a
// PUBLISH on any node reaches a subscriber on every node (locktag's
// hand-over notices cross the cluster bus).
func startCluster(masters int) ([]*server, error) {
	if _, err := exec.LookPath("redis-cli"); err != nil {
		return nil, errors.New("redis-cli not found on PATH (apt-get install -y redis-tools): the cluster scenario needs it")
	}
	nodes := make([]*server, masters)
	errs := make([]error, masters)
	done := make(chan struct{}, masters)
	for i := range nodes {
		go func() {
			nodes[i], errs[i] = startServerWith(func() ([]string, error) {
				bus, err := freePort()
				return []string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
					"--cluster-node-timeout", "2000", "--cluster-port", strconv.Itoa(bus)}, err
			})
			done <- struct{}{}
		}()
	}
	for range nodes {
		<-done
	}
	stopAll := func() {
		for _, s := range nodes {
			if s != nil {
				s.stop()
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		stopAll()
		return nil, err
	}
	addrs := serverAddrs(nodes)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.CommandContext(ctx, "redis-cli", args...).CombinedOutput(); err != nil {
		stopAll()
		return nil, fmt.Errorf("redis-cli --cluster create: %v\n%s", err, out)
	}
	if err := poll(30*time.Second, func() error { return clusterReady(addrs) }); err != nil {
		stopAll()
		return nil, fmt.Errorf("cluster not ready: %w", err)
	}
	round := 0
	if err := poll(30*time.Second, func() error { round++; return clusterMeshed(addrs, round) }); err != nil {
		stopAll()
		return nil, fmt.Errorf("cluster pub/sub not meshed: %w", err)
	}
	return nodes, nil
}

func serverAddrs(ss []*server) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.addr
	}
	return out
}

// poll calls f every 50ms until it succeeds or within has passed, and
// returns its last error then. It polls servers, which have no event to
// wait on.
func poll(within time.Duration, f func() error) error {
	deadline := time.Now().Add(within)
	for {
		err := f()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// clusterReady reports a node that does not yet see the whole Cluster.
func clusterReady(addrs []string) error {
	for _, a := range addrs {
		info, err := redisString(a, "CLUSTER", "INFO")
		if err != nil {
			return fmt.Errorf("%s: %w", a, err)
		}
		f := map[string]string{}
		for _, line := range strings.Split(info, "\n") {
			if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
				f[k] = v
			}
		}
		if f["cluster_state"] != "ok" || f["cluster_slots_ok"] != "16384" || f["cluster_known_nodes"] != strconv.Itoa(len(addrs)) {
			return fmt.Errorf("%s: state %s, slots ok %s, known nodes %s", a, f["cluster_state"], f["cluster_slots_ok"], f["cluster_known_nodes"])
		}
	}
	return nil
}

// clusterMeshed subscribes to a channel of its own on every node,
// publishes once on every node, and reports a subscriber that missed a
// message: a node can report cluster_state:ok before its bus links are
// all up.
func clusterMeshed(addrs []string, round int) error {
	channel := fmt.Sprintf("bench:mesh:%d", round)
	subs := make([]redis.PubSubConn, len(addrs))
	for i, a := range addrs {
		c, err := redis.Dial("tcp", a, redis.DialConnectTimeout(time.Second), redis.DialReadTimeout(time.Second))
		if err != nil {
			return err
		}
		defer c.Close()
		subs[i] = redis.PubSubConn{Conn: c}
		if err := subs[i].Subscribe(channel); err != nil {
			return err
		}
		if _, ok := subs[i].Receive().(redis.Subscription); !ok {
			return fmt.Errorf("%s: SUBSCRIBE not confirmed", a)
		}
	}
	for i, a := range addrs {
		if _, err := redisDo(a, "PUBLISH", channel, strconv.Itoa(i)); err != nil {
			return err
		}
	}
	for i, sub := range subs {
		got := map[string]bool{}
		for len(got) < len(addrs) {
			m, ok := sub.Receive().(redis.Message)
			if !ok {
				return fmt.Errorf("%s received %d of %d messages", addrs[i], len(got), len(addrs))
			}
			got[string(m.Data)] = true
		}
	}
	return nil
}

// redisDo runs one command on a connection of its own to addr.
func redisDo(addr, cmd string, args ...any) (any, error) {
	c, err := redis.Dial("tcp", addr, redis.DialConnectTimeout(time.Second), redis.DialReadTimeout(5*time.Second))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.Do(cmd, args...)
}

func redisString(addr, cmd string, args ...any) (string, error) {
	return redis.String(redisDo(addr, cmd, args...))
}

// slotOwner is the address of the master that serves key's slot, asked of
// the Cluster node addr: a node answers a command on a key of another
// master's slot with "MOVED slot host:port".
func slotOwner(addr, key string) (string, error) {
	_, err := redisDo(addr, "EXISTS", key)
	var re redis.Error
	if errors.As(err, &re) {
		if f := strings.Fields(re.Error()); len(f) == 3 && f[0] == "MOVED" {
			return f[2], nil
		}
	}
	if err != nil {
		return "", err
	}
	return addr, nil
}

// --- the libraries that run on a Cluster ---

// clusterSubjects are the libraries the cluster scenario measures: locktag
// through each driver that serves a Cluster, the peers that run on one,
// and SET+DEL (not a lock) on a go-redis Cluster client. open is given
// every master's address.
func clusterSubjects() []subject {
	return []subject{
		{name: "locktag-goredis", isLock: true, nodes: clusterMasters, open: openLocktagGoredisCluster},
		{name: "locktag-rueidis", isLock: true, nodes: clusterMasters, open: openLocktagRueidisCluster},
		{name: "redislock", isLock: true, nodes: clusterMasters, open: openRedislockCluster},
		{name: "rueidislock", isLock: true, nodes: clusterMasters, open: openRueidislockCluster},
		{name: "rueidislock-m2", isLock: true, nodes: clusterMasters, open: openRueidislockClusterM2},
		{name: "set+del", isLock: false, nodes: clusterMasters, open: openSetDelCluster},
	}
}

// goredisClusterClient is goredisClient's settings on a Cluster client: a
// pool of poolSize per node, ContextTimeoutEnabled, no retries, and every
// command counted in reqs.
func goredisClusterClient(addrs []string, poolSize int, reqs *atomic.Int64) *goredis.ClusterClient {
	cc := goredis.NewClusterClient(&goredis.ClusterOptions{
		Addrs:                 addrs,
		PoolSize:              poolSize,
		DisableIdentity:       true,
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
		ReadTimeout:           10 * time.Second,
		WriteTimeout:          10 * time.Second,
	})
	cc.AddHook(countHook{reqs})
	return cc
}

func openLocktagGoredisCluster(addrs []string, c int, reqs *atomic.Int64) (Lock, func(), error) {
	return goredisClusterLocktag(addrs, c+8, reqs, locker.Params{TTL: lockTTL, Wait: time.Minute})
}

func goredisClusterLocktag(addrs []string, poolSize int, reqs *atomic.Int64, p locker.Params) (Lock, func(), error) {
	return locktagOnGoredis(goredisClusterClient(addrs, poolSize, reqs), p)
}

// openLocktagRueidisCluster is locktag on a rueidis Cluster client with
// rueidis' defaults.
func openLocktagRueidisCluster(addrs []string, _ int, reqs *atomic.Int64) (Lock, func(), error) {
	return rueidisLocktag(addrs, reqs, locker.Params{TTL: lockTTL, Wait: time.Minute})
}

// openRedislockCluster is redislock on a go-redis Cluster client set as
// locktag-goredis's.
func openRedislockCluster(addrs []string, c int, reqs *atomic.Int64) (Lock, func(), error) {
	cc := goredisClusterClient(addrs, c+8, reqs)
	return redislockLock{redislock.New(cc)}, func() { cc.Close() }, nil
}

// openRueidislockCluster is rueidislock on a rueidis Cluster client with
// KeyMajority 1: one key per lock, on one master, as every other
// library's lock.
func openRueidislockCluster(addrs []string, _ int, reqs *atomic.Int64) (Lock, func(), error) {
	return rueidislockOn(addrs, 1, reqs)
}

// openRueidislockClusterM2 is rueidislock with its default KeyMajority, 2:
// three keys per lock, in three slots, of which it must hold two: its
// maintainer's advice for a Cluster, whose masters then share each lock.
func openRueidislockClusterM2(addrs []string, _ int, reqs *atomic.Int64) (Lock, func(), error) {
	return rueidislockOn(addrs, 2, reqs)
}

// setDelCluster is one SET and one DEL on a go-redis Cluster client: not a
// lock, the two-round-trip floor.
type setDelCluster struct{ cc *goredis.ClusterClient }

func (r setDelCluster) Lock(ctx context.Context, key string) (func() error, error) {
	if err := r.cc.Set(ctx, key, "x", lockTTL).Err(); err != nil {
		return nil, err
	}
	return func() error { return r.cc.Del(ctx, key).Err() }, nil
}

func openSetDelCluster(addrs []string, c int, reqs *atomic.Int64) (Lock, func(), error) {
	cc := goredisClusterClient(addrs, c+8, reqs)
	return setDelCluster{cc}, func() { cc.Close() }, nil
}
