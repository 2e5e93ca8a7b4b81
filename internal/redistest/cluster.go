package redistest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

// Cluster is a local Redis Cluster: redis-server processes with
// cluster-enabled on loopback ports, joined by `redis-cli --cluster
// create`. Each node's cluster bus has its own free port (cluster-port),
// so client ports need no room above them.
type Cluster struct {
	// Nodes are every node of the cluster, masters and replicas, in the
	// order given to redis-cli (which makes the first ones masters).
	Nodes []*Server
	// replicas is how many of Nodes must be known as replicas before
	// StartCluster returns; 0 after.
	replicas int
}

// StartCluster starts a Redis Cluster of masters masters, each with
// replicas replicas, and waits until every node reports cluster_state:ok and
// knows every other node. Every node is stopped when the test ends. The
// test is skipped when the client (CLIBinary: redis-cli, or valkey-cli for
// Valkey) is missing and LOCKTAG_SKIP_REDIS=1; otherwise it fails
// (redis-cli is in Debian's redis-tools package, a dependency of
// redis-server; valkey-cli in valkey-tools).
func StartCluster(t testing.TB, masters, replicas int) *Cluster {
	t.Helper()
	if masters < 3 {
		t.Fatal("redistest: a Redis Cluster needs at least 3 masters")
	}
	cli := CLIBinary()
	if _, err := exec.LookPath(cli); err != nil {
		if os.Getenv("LOCKTAG_SKIP_REDIS") == "1" {
			t.Skip(cli + " not installed (LOCKTAG_SKIP_REDIS=1)")
		}
		t.Fatalf("redistest: %s not found: install it (Debian: redis-tools, or valkey-tools for valkey-cli), or name it in %s", cli, CLIEnv)
	}
	n := masters * (1 + replicas)
	c := &Cluster{Nodes: make([]*Server, n), replicas: masters * replicas}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range c.Nodes {
		wg.Go(func() { c.Nodes[i], errs[i] = launchClusterNode() })
	}
	wg.Wait()
	for _, s := range c.Nodes {
		if s != nil {
			s.t = t
			t.Cleanup(s.Close)
		}
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	args := []string{"--cluster", "create"}
	args = append(args, c.Addrs()...)
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redistest: %s --cluster create: %v\n%s", cli, err, out)
	}
	if err := c.waitReady(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	c.replicas = 0 // a failover may turn a replica into a master: WaitReady does not count them
	if err := c.waitMesh(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	return c
}

// waitMesh waits until a PUBLISH on any node reaches a subscriber on every
// node. A node can report cluster_state:ok and know every node before its
// cluster bus link to each of them is up, and a message published then
// misses the nodes without one (seen with Valkey 8.0 in about one cluster
// of six); the tests that follow count on every message crossing.
func (c *Cluster) waitMesh(within time.Duration) error {
	deadline := time.Now().Add(within)
	for round := 0; ; round++ {
		err := c.mesh(fmt.Sprintf("redistest:mesh:%d", round))
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redistest: cluster pub/sub not meshed within %v: %w", within, err)
		}
		time.Sleep(50 * time.Millisecond) // polling servers, not synchronising goroutines
	}
}

// mesh subscribes to channel on every node, publishes once from every node
// and reports a subscriber that missed a message.
func (c *Cluster) mesh(channel string) error {
	subs := make([]redis.PubSubConn, len(c.Nodes))
	for i, s := range c.Nodes {
		conn, err := redis.Dial("tcp", s.Addr(), redis.DialConnectTimeout(time.Second),
			redis.DialReadTimeout(time.Second))
		if err != nil {
			return err
		}
		defer conn.Close()
		subs[i] = redis.PubSubConn{Conn: conn}
		if err := subs[i].Subscribe(channel); err != nil {
			return err
		}
		if _, ok := subs[i].Receive().(redis.Subscription); !ok {
			return fmt.Errorf("%s: SUBSCRIBE not confirmed", s.Addr())
		}
	}
	for i, s := range c.Nodes {
		if _, err := s.Do("PUBLISH", channel, strconv.Itoa(i)); err != nil {
			return err
		}
	}
	for i, sub := range subs {
		got := make(map[string]bool)
		for len(got) < len(c.Nodes) {
			m, ok := sub.Receive().(redis.Message)
			if !ok {
				return fmt.Errorf("%s received %d of %d messages", c.Nodes[i].Addr(), len(got), len(c.Nodes))
			}
			got[string(m.Data)] = true
		}
	}
	return nil
}

// launchClusterNode starts one cluster-enabled node; a bus port taken
// between choosing and binding it costs another attempt.
func launchClusterNode() (*Server, error) {
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		bus, err := FreePort()
		if err != nil {
			lastErr = err
			continue
		}
		s, err := Launch(WithArgs(
			"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf", // in the server's own directory
			"--cluster-node-timeout", "2000",
			"--cluster-port", strconv.Itoa(bus),
		))
		if err == nil {
			return s, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

// Addrs are the host:port of every node, for a go-redis ClusterClient's
// Addrs or redis-cli.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, s := range c.Nodes {
		out[i] = s.Addr()
	}
	return out
}

// waitReady polls every running node until it reports cluster_state:ok
// with all slots assigned and knows every node of the cluster.
func (c *Cluster) waitReady(within time.Duration) error {
	start := time.Now()
	deadline := start.Add(within)
	nudged := false
	for {
		err := c.ready()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redistest: cluster not ready within %v: %w", within, err)
		}
		if !nudged && time.Since(start) > 5*time.Second {
			// On a loaded machine a node of a 6-node cluster was seen to
			// miss one node for 30s: introduce every node to every
			// other once more (a MEET of a known node is ignored).
			nudged = true
			c.meetAll()
		}
		time.Sleep(20 * time.Millisecond) // polling a server, not synchronising goroutines
	}
}

// meetAll sends CLUSTER MEET for every other node to every running node.
func (c *Cluster) meetAll() {
	for _, s := range c.Nodes {
		if !s.Running() {
			continue
		}
		for _, o := range c.Nodes {
			if o == s {
				continue
			}
			host, port, _ := splitAddr(o.Addr())
			_, _ = s.Do("CLUSTER", "MEET", host, port, o.argValue("--cluster-port"))
		}
	}
}

func (c *Cluster) ready() error {
	for _, s := range c.Nodes {
		if !s.Running() {
			continue
		}
		info, err := redis.String(s.Do("CLUSTER", "INFO"))
		if err != nil {
			return fmt.Errorf("%s: %w", s.Addr(), err)
		}
		f := infoFields(info)
		if f["cluster_state"] != "ok" || f["cluster_slots_ok"] != "16384" ||
			f["cluster_known_nodes"] != strconv.Itoa(len(c.Nodes)) {
			return fmt.Errorf("%s: state %s, slots ok %s, known nodes %s", s.Addr(),
				f["cluster_state"], f["cluster_slots_ok"], f["cluster_known_nodes"])
		}
		if c.replicas == 0 {
			continue
		}
		// At start-up, every node knows which nodes are replicas (a
		// replica is reported as an empty master until its REPLICATE
		// spreads).
		nodes, err := redis.String(s.Do("CLUSTER", "NODES"))
		if err != nil {
			return fmt.Errorf("%s: %w", s.Addr(), err)
		}
		if n := strings.Count(nodes, "slave"); n < c.replicas {
			return fmt.Errorf("%s: knows %d of %d replicas", s.Addr(), n, c.replicas)
		}
	}
	return nil
}

// WaitReady waits until every running node reports cluster_state:ok again
// (after a failover, say) and fails the test otherwise.
func (c *Cluster) WaitReady(t testing.TB, within time.Duration) {
	t.Helper()
	if err := c.waitReady(within); err != nil {
		t.Fatal(err)
	}
}

// infoFields parses "name:value" lines of INFO or CLUSTER INFO.
func infoFields(info string) map[string]string {
	f := make(map[string]string)
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			f[k] = v
		}
	}
	return f
}

// Masters returns the nodes that are masters now, as the first running
// node's CLUSTER NODES sees them.
func (c *Cluster) Masters(t testing.TB) []*Server {
	t.Helper()
	var out []*Server
	for _, n := range c.clusterNodes(t) {
		if n.master && !n.failed {
			out = append(out, c.byAddr(n.addr))
		}
	}
	return out
}

// KeySlot returns the hash slot of key (CLUSTER KEYSLOT).
func (c *Cluster) KeySlot(t testing.TB, key string) int {
	t.Helper()
	slot, err := redis.Int(c.running(t).Do("CLUSTER", "KEYSLOT", key))
	if err != nil {
		t.Fatalf("redistest: CLUSTER KEYSLOT %q: %v", key, err)
	}
	return slot
}

// MasterOf returns the master that serves slot now.
func (c *Cluster) MasterOf(t testing.TB, slot int) *Server {
	t.Helper()
	for _, n := range c.clusterNodes(t) {
		if !n.master || n.failed {
			continue
		}
		for _, r := range n.slots {
			if slot >= r[0] && slot <= r[1] {
				return c.byAddr(n.addr)
			}
		}
	}
	t.Fatalf("redistest: no master serves slot %d", slot)
	return nil
}

type clusterNode struct {
	addr   string
	master bool
	failed bool
	slots  [][2]int
}

// clusterNodes parses CLUSTER NODES of the first running node:
// "<id> <ip:port@bus> <flags> <master> <ping> <pong> <epoch> <link> <slot>...".
func (c *Cluster) clusterNodes(t testing.TB) []clusterNode {
	t.Helper()
	out, err := redis.String(c.running(t).Do("CLUSTER", "NODES"))
	if err != nil {
		t.Fatalf("redistest: CLUSTER NODES: %v", err)
	}
	var nodes []clusterNode
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		n := clusterNode{addr: addr}
		for _, flag := range strings.Split(f[2], ",") {
			switch flag {
			case "master":
				n.master = true
			case "fail", "fail?":
				n.failed = true
			}
		}
		for _, r := range f[8:] {
			if strings.HasPrefix(r, "[") {
				continue // a slot being migrated
			}
			lo, hi, ok := strings.Cut(r, "-")
			if !ok {
				hi = lo
			}
			a, err1 := strconv.Atoi(lo)
			b, err2 := strconv.Atoi(hi)
			if err1 == nil && err2 == nil {
				n.slots = append(n.slots, [2]int{a, b})
			}
		}
		nodes = append(nodes, n)
	}
	return nodes
}

func (c *Cluster) running(t testing.TB) *Server {
	t.Helper()
	for _, s := range c.Nodes {
		if s.Running() {
			return s
		}
	}
	t.Fatal("redistest: no cluster node is running")
	return nil
}

func (c *Cluster) byAddr(addr string) *Server {
	for _, s := range c.Nodes {
		if s.Addr() == addr {
			return s
		}
	}
	return nil
}

// MoveSlot moves slot from the master from to the master to as redis-cli
// --cluster reshard does: to imports it, from migrates it, its keys go
// across in batches of batch with MIGRATE, and every master is told the
// new owner. While it runs, calls on the slot's keys meet ASK, TRYAGAIN
// (a script's keys split between the two) and, after it, MOVED.
func (c *Cluster) MoveSlot(slot int, from, to *Server, batch int) error {
	fromID, err := redis.String(from.Do("CLUSTER", "MYID"))
	if err != nil {
		return fmt.Errorf("CLUSTER MYID: %w", err)
	}
	toID, err := redis.String(to.Do("CLUSTER", "MYID"))
	if err != nil {
		return fmt.Errorf("CLUSTER MYID: %w", err)
	}
	if _, err := to.Do("CLUSTER", "SETSLOT", slot, "IMPORTING", fromID); err != nil {
		return fmt.Errorf("SETSLOT IMPORTING: %w", err)
	}
	if _, err := from.Do("CLUSTER", "SETSLOT", slot, "MIGRATING", toID); err != nil {
		return fmt.Errorf("SETSLOT MIGRATING: %w", err)
	}
	host, port, _ := strings.Cut(to.Addr(), ":")
	for range 10000 {
		keys, err := redis.Strings(from.Do("CLUSTER", "GETKEYSINSLOT", slot, batch))
		if err != nil {
			return fmt.Errorf("GETKEYSINSLOT: %w", err)
		}
		if len(keys) == 0 {
			break
		}
		args := []any{host, port, "", 0, 5000, "KEYS"}
		for _, k := range keys {
			args = append(args, k)
		}
		if _, err := from.Do("MIGRATE", args...); err != nil {
			return fmt.Errorf("MIGRATE: %w", err)
		}
	}
	// The importing master first, then the one that gave the slot up, then
	// the others, as redis-cli does.
	order := []*Server{to, from}
	for _, s := range c.Nodes {
		if s != to && s != from && s.Running() {
			order = append(order, s)
		}
	}
	for _, s := range order {
		if _, err := s.Do("CLUSTER", "SETSLOT", slot, "NODE", toID); err != nil {
			return fmt.Errorf("SETSLOT NODE on %s: %w", s.Addr(), err)
		}
	}
	// The new owner claims the slot with a new config epoch, which the
	// other nodes learn by the cluster bus; a move started before they all
	// have would be undone by the older claim. Wait until every node sees
	// to as the owner and they agree on the current epoch.
	return c.settled(slot, toID, order, 10*time.Second)
}

// settled polls until every node of nodes sees owner serving slot, with
// no migration open, and all report the same cluster_current_epoch.
func (c *Cluster) settled(slot int, owner string, nodes []*Server, within time.Duration) error {
	var last string
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) { // poll: the cluster bus has no event to wait on
		ok := true
		epoch := ""
		for _, s := range nodes {
			out, err := redis.String(s.Do("CLUSTER", "NODES"))
			if err != nil {
				return fmt.Errorf("CLUSTER NODES: %w", err)
			}
			if !servesSlot(out, owner, slot) || strings.Contains(out, "["+strconv.Itoa(slot)+"-") {
				ok, last = false, s.Addr()+" sees:\n"+out
				break
			}
			info, err := redis.String(s.Do("CLUSTER", "INFO"))
			if err != nil {
				return fmt.Errorf("CLUSTER INFO: %w", err)
			}
			e := infoValue(info, "cluster_current_epoch")
			if epoch != "" && e != epoch {
				ok, last = false, "epochs differ: "+epoch+" and "+e
				break
			}
			epoch = e
		}
		if ok {
			return nil
		}
	}
	return fmt.Errorf("slot %d not settled on %s after %v: %s", slot, owner, within, last)
}

// servesSlot reports whether CLUSTER NODES output out shows the node id
// serving slot.
func servesSlot(out, id string, slot int) bool {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 8 || f[0] != id {
			continue
		}
		for _, r := range f[8:] {
			lo, hi, ok := strings.Cut(r, "-")
			if !ok {
				hi = lo
			}
			a, err1 := strconv.Atoi(lo)
			b, err2 := strconv.Atoi(hi)
			if err1 == nil && err2 == nil && slot >= a && slot <= b {
				return true
			}
		}
	}
	return false
}

// infoValue is the value of name in INFO-style output.
func infoValue(info, name string) string {
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return v
		}
	}
	return ""
}
