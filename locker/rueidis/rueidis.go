package rueidis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"

	"github.com/redis/rueidis"

	"github.com/locktag/locktag/locker/driver"
)

// rueidisDriver is a driver.Driver on a rueidis client: the caller's (New)
// or one it builds itself on first use (NewFromOption).
type rueidisDriver struct {
	src source
}

// clusterDriver is the driver on a Cluster client: it also names the
// masters (driver.Masters), so the Locker visits each for List and takes a
// multi-key lock key by key.
type clusterDriver struct{ *rueidisDriver }

// New returns a [driver.Driver] on c, any client rueidis.NewClient
// returns: a single server, a Cluster (InitAddress naming its nodes) or a
// Sentinel set-up (ClientOption.Sentinel). Pass it to locker.New (or, one
// per master, to locker.NewRedlock). The Locker does not close c.
func New(c rueidis.Client) driver.Driver {
	if c == nil {
		return invalid{fmt.Errorf("%w: rueidis.New: nil client", driver.ErrBadOption)}
	}
	d := &rueidisDriver{src: fixed{c}}
	if c.Mode() == rueidis.ClientModeCluster {
		return clusterDriver{d}
	}
	return d
}

// NewFromOption returns a [driver.Driver] on a client it makes itself with
// rueidis.NewClient(opt), and closes with the Locker. rueidis.NewClient
// fails when it cannot reach Redis; here the client is made on the first
// call instead, and again by later calls until it succeeds, which fail
// meanwhile with locker.ErrNotSent (locker.ErrUnavailable): a service
// starts while Redis is down, as it does with the other drivers. Which
// kind of client opt makes is known only then, so the driver always
// offers driver.Masters (one driver on anything but a Cluster).
func NewFromOption(opt rueidis.ClientOption) driver.Driver {
	if len(opt.InitAddress) == 0 {
		return invalid{fmt.Errorf("%w: rueidis.NewFromOption: no InitAddress", driver.ErrBadOption)}
	}
	return clusterDriver{&rueidisDriver{src: newLazy(opt)}}
}

func (d *rueidisDriver) Eval(ctx context.Context, s *driver.Script, keys driver.Keys, args ...any) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, driver.NotSent(err)
	}
	c, err := d.src.client(ctx)
	if err != nil {
		return nil, driver.NotSent(err)
	}
	cmd, err := evalsha(c.B(), s, keys, args)
	if err != nil {
		return nil, err
	}
	res := c.Do(ctx, cmd)
	if isNoScript(res.Error()) {
		// In a Cluster each master has its own script cache: this is the
		// first call on the master that owns keys' slot (or it restarted,
		// or the cache was flushed). EVAL runs and loads the script.
		if cmd, err = eval(c.B(), s, keys, args); err != nil {
			return nil, err
		}
		res = c.Do(ctx, cmd)
	}
	return reply(res)
}

// Close closes the client if the driver made it (NewFromOption); a
// client given to New stays open.
func (d *rueidisDriver) Close() error {
	d.src.close()
	return nil
}

// evalsha builds EVALSHA. Arguments are appended one at a time: the
// command's own (pooled) argument list is the only copy. A Cluster
// client's builder refuses keys of several slots by panicking; that
// becomes the error Redis would give.
func evalsha(b rueidis.Builder, s *driver.Script, keys driver.Keys, args []any) (cmd rueidis.Completed, err error) {
	defer crossSlot(&err)
	k := b.Evalsha().Sha1(s.Hash()).Numkeys(int64(keys.Len())).Key(keys.Names()...)
	if len(args) == 0 {
		return k.Build(), nil
	}
	a := k.Arg(arg(args[0]))
	for _, x := range args[1:] {
		a = a.Arg(arg(x))
	}
	return a.Build(), nil
}

// eval builds EVAL (see evalsha).
func eval(b rueidis.Builder, s *driver.Script, keys driver.Keys, args []any) (cmd rueidis.Completed, err error) {
	defer crossSlot(&err)
	k := b.Eval().Script(s.Source()).Numkeys(int64(keys.Len())).Key(keys.Names()...)
	if len(args) == 0 {
		return k.Build(), nil
	}
	a := k.Arg(arg(args[0]))
	for _, x := range args[1:] {
		a = a.Arg(arg(x))
	}
	return a.Build(), nil
}

// errCrossSlot is the error of a call whose keys are in several slots of a
// Cluster; nothing was sent. It says CROSSSLOT as Redis's own error does,
// which turns the locker's one-script multi-key path off.
var errCrossSlot = errors.New("CROSSSLOT Keys in request don't hash to the same slot (rueidis refused to send the call)")

func crossSlot(err *error) {
	if r := recover(); r != nil {
		*err = driver.NotSent(fmt.Errorf("%w: %v", errCrossSlot, r))
	}
}

func isNoScript(err error) bool {
	var re *rueidis.RedisError
	return errors.As(err, &re) && re.IsNoScript()
}

// reply converts a result to the Driver contract's types.
func reply(res rueidis.RedisResult) (any, error) {
	if err := res.NonRedisError(); err != nil {
		if sentNothing(err) {
			return nil, driver.NotSent(err)
		}
		return nil, err
	}
	m, err := res.ToMessage()
	if err != nil {
		if rueidis.IsRedisNil(err) {
			return nil, nil
		}
		return nil, err
	}
	return value(&m), nil
}

// value converts one message to what driver.NormalizeReply takes and
// returns its result. An error inside an array becomes nil.
func value(m *rueidis.RedisMessage) any {
	if m.IsArray() {
		a, _ := m.ToArray()
		out := make([]any, len(a))
		for i := range a {
			out[i] = value(&a[i])
		}
		return out
	}
	v, _ := m.ToAny() // an error: nil
	return driver.NormalizeReply(v)
}

// sentNothing reports whether err is the failure of a call that never
// reached Redis: no connection could be made, or the client was closed.
func sentNothing(err error) bool {
	if errors.Is(err, rueidis.ErrClosing) || errors.Is(err, rueidis.ErrNoSlot) || errors.Is(err, rueidis.ErrNoAddr) {
		return true
	}
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "dial"
}

// arg formats a script's argument as Redis receives it: numbers in
// decimal, strings as they are.
func arg(a any) string {
	switch v := a.(type) {
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	case int:
		return strconv.Itoa(v)
	case []byte:
		return string(v)
	case int32:
		return strconv.FormatInt(int64(v), 10)
	case uint64:
		return strconv.FormatUint(v, 10)
	case uint32:
		return strconv.FormatUint(uint64(v), 10)
	case uint:
		return strconv.FormatUint(uint64(v), 10)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case bool:
		if v {
			return "1"
		}
		return "0"
	case nil:
		return ""
	}
	return fmt.Sprint(a)
}

// Masters returns a driver per master of a Cluster, sorted by address
// (driver.Masters), or just d on anything else. Each sends its calls on
// the cluster client's own connection to its node.
func (d clusterDriver) Masters(ctx context.Context) ([]driver.Driver, error) {
	c, err := d.src.client(ctx)
	if err != nil {
		return nil, driver.NotSent(err)
	}
	if c.Mode() != rueidis.ClientModeCluster {
		return []driver.Driver{d}, nil
	}
	addrs, _, err := slotNodes(ctx, c)
	if err != nil {
		return nil, err
	}
	nodes := c.Nodes()
	out := make([]driver.Driver, 0, len(addrs))
	for _, a := range addrs {
		n, ok := nodes[a]
		if !ok {
			return nil, fmt.Errorf("rueidis: master %s is not among the client's nodes", a)
		}
		out = append(out, &rueidisDriver{src: fixed{n}})
	}
	return out, nil
}

// slotNodes reads the masters' and the replicas' addresses (host:port)
// from CLUSTER SLOTS, each sorted.
func slotNodes(ctx context.Context, c rueidis.Client) (masters, replicas []string, err error) {
	ranges, err := clusterSlots(ctx, c)
	if err != nil {
		return nil, nil, err
	}
	seen := map[string]bool{}
	for _, r := range ranges {
		f, err := r.ToArray()
		if err != nil || len(f) < 3 {
			return nil, nil, fmt.Errorf("rueidis: unexpected CLUSTER SLOTS reply")
		}
		for i, n := range f[2:] {
			node, err := n.ToArray()
			if err != nil || len(node) < 2 {
				return nil, nil, fmt.Errorf("rueidis: unexpected CLUSTER SLOTS reply")
			}
			host, _ := node[0].ToString()
			port, _ := node[1].AsInt64()
			a := net.JoinHostPort(host, strconv.FormatInt(port, 10))
			if seen[a] {
				continue
			}
			seen[a] = true
			if i == 0 {
				masters = append(masters, a)
			} else {
				replicas = append(replicas, a)
			}
		}
	}
	sort.Strings(masters)
	sort.Strings(replicas)
	return masters, replicas, nil
}

// clusterSlots asks c for CLUSTER SLOTS. rueidis sends a command without
// keys to any node it knows, a replica that is down included: when that
// node does not answer, each other node is asked in turn, by address.
func clusterSlots(ctx context.Context, c rueidis.Client) ([]rueidis.RedisMessage, error) {
	ranges, err := c.Do(ctx, c.B().ClusterSlots().Build()).ToArray()
	if _, refused := rueidis.IsRedisErr(err); err == nil || refused {
		return ranges, err
	}
	nodes := c.Nodes()
	addrs := make([]string, 0, len(nodes))
	for a := range nodes {
		addrs = append(addrs, a)
	}
	sort.Strings(addrs)
	for _, a := range addrs {
		if ctx.Err() != nil {
			break
		}
		n := nodes[a]
		if r, e := n.Do(ctx, n.B().ClusterSlots().Build()).ToArray(); e == nil {
			return r, nil
		}
	}
	return nil, err
}

// invalid is the driver of a constructor call with bad arguments: Validate
// reports them, and every call fails with them, having sent nothing.
type invalid struct{ err error }

func (d invalid) Validate() error { return d.err }

func (d invalid) Eval(context.Context, *driver.Script, driver.Keys, ...any) (any, error) {
	return nil, driver.NotSent(d.err)
}

func (d invalid) Listen(context.Context, func(string, string), func(error)) (driver.Listener, error) {
	return nil, d.err
}
