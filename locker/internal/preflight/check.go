package preflight

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/internal/backend"
	"github.com/locktag/locktag/locker/internal/lockerr"
	"github.com/locktag/locktag/locker/internal/protocol"
)

// ListenerChannels is the pattern of the channels the drivers' subscriber
// connections stay subscribed to (redigo's "locktag:listener", go-redis's
// "locktag:listener:<random>"), whatever the key prefix.
const ListenerChannels = "locktag:listener*"

// Failed is the error of a check or ping that failed with err: it
// matches ErrUnavailable when a node did not answer, and lockerr.ErrUnsupported
// when one lacks a capability (a Redlock Locker's error can match both).
func Failed(err error) error {
	if err == nil {
		return nil
	}
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	for _, e := range errs {
		if !errors.Is(e, lockerr.ErrUnsupported) {
			return lockerr.Unavailable(err)
		}
	}
	return err
}

// Ping runs Check on nd until it has passed once there (nd.Capable), and a
// trivial script after that: a start-up Ping or the first health checks
// find a server that cannot serve the locker, and later health checks
// cost one call.
func Ping(ctx context.Context, nd *backend.Node) error {
	if !nd.Capable.Load() {
		return Check(ctx, nd)
	}
	_, err := protocol.Ping.Eval(ctx, nd.Drv, driver.Keys{}, &protocol.Args{})
	return err
}

// Check runs Locker.Check on one node and remembers a pass in nd.Capable
// (see Ping). Its error is a driver's (the node did not answer) or wraps
// lockerr.ErrUnsupported (lockerr.ErrEvictionPolicy for an evicting
// maxmemory-policy).
func Check(ctx context.Context, nd *backend.Node) error {
	sh := nd.Sh
	ms, err := nd.Masters(ctx)
	if err != nil {
		if msg, ok := refusal(err); ok {
			return fmt.Errorf("%w: the client library's own command refused (%s): allow it for this user (see docs/servers.md)", lockerr.ErrUnsupported, msg)
		}
		return err
	}
	var missing []string
	var evicting string // a policy that may evict a held lock, refused
	args := checkArgs(sh, "", "")
	scripting, publish := true, true
	for _, d := range ms {
		v, err := sh.CheckScript.Eval(ctx, d, driver.Keys{}, args)
		if err != nil {
			msg, ok := refusal(err)
			if !ok {
				return err
			}
			missing = append(missing, "scripting: EVALSHA and EVAL refused ("+msg+"): allow them for this user (+evalsha +eval) and enable Lua on the server")
			scripting = false
			break
		}
		f, err := checkReply(v)
		if err != nil {
			return err
		}
		if f.old != "" {
			missing = append(missing, "the server is Redis "+f.old+": the scripts need Redis 7.0 or later (SET … NX GET, GETDEL, PXAT) or Valkey 7.2 or later")
			break
		}
		if p := f.evicting; p != "" && evicting == "" {
			if sh.Cfg.AllowEviction {
				risk(sh, "maxmemory-policy "+p+" with a maxmemory: Redis may evict a held lock's key and grant the lock again while its holder runs; accepted by locker.WithEvictionAllowed")
			} else {
				evicting = p
				missing = append(missing, "maxmemory-policy "+p+" with a maxmemory: Redis may evict a held lock's key and grant the lock again while its holder runs: "+
					"set maxmemory-policy noeviction (or no maxmemory) on every master, or accept the risk with locker.WithEvictionAllowed")
			}
		}
		if f.aofOff {
			sh.AOFOff.Store(true)
		}
		if f.infoDenied {
			risk(sh, "INFO is refused to this user, so Check cannot read maxmemory-policy: allow +info, and keep the policy noeviction (an evicted lock key is granted again)")
		}
		if len(f.denied) > 0 {
			publish = publish && !slices.Contains(f.denied, "PUBLISH")
			missing = append(missing, fmt.Sprintf("commands the scripts call, denied to this user on keys %[1]s*: %[2]s: allow +%[3]s on ~%[1]s* &%[1]s*",
				sh.Cfg.Prefix, strings.Join(f.denied, " "), strings.ToLower(strings.Join(f.denied, " +"))))
		}
		if len(f.unknown) > 0 {
			publish = publish && !slices.Contains(f.unknown, "PUBLISH")
			missing = append(missing, "commands the scripts call, unknown to the server: "+strings.Join(f.unknown, " "))
		}
		if len(f.denied) > 0 || len(f.unknown) > 0 {
			break // the same user on every master
		}
	}
	if err := checkPubSub(ctx, nd, ms, scripting && publish); err != nil {
		msg, ok := refusal(err)
		switch {
		case errors.Is(err, errNotDelivered):
			missing = append(missing, err.Error())
		case !ok:
			return err
		default:
			missing = append(missing, fmt.Sprintf("pub/sub: SUBSCRIBE refused (%s): allow +subscribe +unsubscribe +ping and the channels &%s* &%s for this user",
				msg, sh.Cfg.Prefix, ListenerChannels))
		}
	}
	if scripting {
		if refused := checkReplicas(ctx, nd); len(refused) > 0 {
			evicting = "replica" // the error matches ErrEvictionPolicy
			missing = append(missing, refused...)
		}
	}
	if len(missing) > 0 {
		why := lockerr.ErrUnsupported
		if evicting != "" {
			why = lockerr.ErrEvictionPolicy
		}
		return fmt.Errorf("%w: %s (see docs/servers.md)", why, strings.Join(missing, "; "))
	}
	nd.Capable.Store(true)
	return nil
}

// ReadFacts runs the check's script on every master of nd, publishing
// nothing, and facts.lua on every replica its driver lists
// (driver.Replicas), and returns what INFO said on each: the masters in
// the order of Node.Masters, then the replicas that answered, by address.
func ReadFacts(ctx context.Context, nd *backend.Node) ([]Facts, error) {
	ms, err := nd.Masters(ctx)
	if err != nil {
		return nil, err
	}
	args := checkArgs(nd.Sh, "", "")
	out := make([]Facts, 0, len(ms))
	for _, d := range ms {
		v, err := nd.Sh.CheckScript.Eval(ctx, d, driver.Keys{}, args)
		if err != nil {
			return nil, err
		}
		f, err := checkReply(v)
		if err != nil {
			return nil, err
		}
		out = append(out, f.facts)
	}
	return append(out, replicaFacts(ctx, nd)...), nil
}

// errNotDelivered: a message a script published did not reach the
// subscriber connection.
var errNotDelivered = errors.New("pub/sub: a message a script published did not reach the subscriber connection (a proxy that does not forward pub/sub?)")

// checkPubSub opens a subscriber connection of its own on nd, subscribes
// to a channel of this check and, when publish is set, has each master's
// check script publish on it and waits for every message.
func checkPubSub(ctx context.Context, nd *backend.Node, ms []driver.Driver, publish bool) error {
	channel := nd.Sh.Cfg.Prefix + "check:" + protocol.NewToken()
	got := make(chan string, len(ms))
	broken := make(chan error, 1)
	lis, err := nd.Drv.Listen(ctx, func(ch, payload string) {
		if ch == channel {
			select {
			case got <- payload:
			default:
			}
		}
	}, func(err error) {
		select {
		case broken <- err:
		default:
		}
	})
	if err != nil {
		return err
	}
	defer lis.Close()
	if err := lis.Subscribe(ctx, channel); err != nil {
		// A refusal of the listener's first SUBSCRIBE comes on the
		// connection (redigo reads it there), which then ends: this
		// SUBSCRIBE fails with ErrListenerClosed, or with the closed
		// connection's error when it was written as that happened. broken
		// has the reason, in either case soon.
		select {
		case b := <-broken:
			if _, ok := refusal(b); ok || errors.Is(err, driver.ErrListenerClosed) {
				err = b
			}
		case <-ctx.Done():
		}
		return err
	}
	if !publish {
		return nil
	}
	for i, d := range ms {
		if _, err := nd.Sh.CheckScript.Eval(ctx, d, driver.Keys{}, checkArgs(nd.Sh, channel, strconv.Itoa(i))); err != nil {
			return err
		}
	}
	for range ms {
		select {
		case <-got:
		case err := <-broken:
			return err
		case <-ctx.Done():
			return errNotDelivered
		}
	}
	return nil
}

// checkFindings is what check.lua found on one master.
type checkFindings struct {
	denied, unknown []string // commands denied to the user, unknown to the server
	old             string   // the version of a server too old for the scripts, or ""
	evicting        string   // a maxmemory-policy that may evict a held lock, or ""
	infoDenied      bool     // INFO refused to the user: the policy is unknown
	aofOff          bool     // appendonly is off
	facts           Facts    // what INFO said, where the user may read it
}

// Facts are what one master's (or replica's) INFO says about the
// settings a lock's safety depends on (Locker.ServerFacts). Known is false
// where INFO is refused to the user (or the server does not answer it):
// the rest but Replica and Addr is then zero.
type Facts struct {
	Known       bool
	MaxMemory   int64  // maxmemory in bytes; 0: none
	Policy      string // maxmemory-policy
	EvictedKeys int64  // evicted_keys since the server started
	AOF         bool   // appendonly is on
	Replica     bool   // a replica (driver.Replicas), not a master
	Addr        string // a replica's host:port; "" for a master
}

// checkReply reads check.lua's reply (and facts.lua's, its facts alone).
func checkReply(v any) (checkFindings, error) {
	var f checkFindings
	a, ok := v.([]any)
	if !ok || len(a) == 0 {
		return f, fmt.Errorf("locker: unexpected check reply %v", v)
	}
	for _, p := range a[1:] {
		s, _ := p.(string)
		if fact, ok := strings.CutPrefix(s, "="); ok {
			f.facts.Known = true
			name, v, _ := strings.Cut(fact, ":")
			n, _ := strconv.ParseInt(v, 10, 64)
			switch name {
			case "maxmemory":
				f.facts.MaxMemory = n
			case "policy":
				f.facts.Policy = v
			case "evicted":
				f.facts.EvictedKeys = n
			case "aof":
				f.facts.AOF = v == "1"
			}
		} else if s == "%aof" {
			f.aofOff = true
		} else if version, ok := strings.CutPrefix(s, "!"); ok {
			f.old = version
		} else if policy, ok := strings.CutPrefix(s, "~"); ok {
			if policy == "?" {
				f.infoDenied = true
			} else {
				f.evicting = policy
			}
		} else if c, ok := strings.CutSuffix(s, "?"); ok {
			f.unknown = append(f.unknown, c)
		} else {
			f.denied = append(f.denied, s)
		}
	}
	return f, nil
}

// refusal returns the server's message when err is its refusal of a
// command (an ACL, a command the server does not have or allow), as
// opposed to a failure to reach it.
func refusal(err error) (string, bool) {
	msg := err.Error()
	for _, s := range []string{"NOPERM", "unknown command", "unknown subcommand", "ACL failure", "can't run this command", "not allowed"} {
		if strings.Contains(msg, s) {
			return msg, true
		}
	}
	return "", false
}

// risk reports what Check found and accepted (see backend.Hooks.Risk).
func risk(sh *backend.Shared, what string) {
	if sh.Hooks.Risk != nil {
		sh.Hooks.Risk(what)
	}
}

// skipped reports a replica Check did not check (see
// backend.Hooks.Skipped).
func skipped(sh *backend.Shared, what string) {
	if sh.Hooks.Skipped != nil {
		sh.Hooks.Skipped(what)
	}
}

// checkArgs are the check script's arguments for sh's Locker: its check
// key, and payload to publish on channel ("": none).
func checkArgs(sh *backend.Shared, channel, payload string) *protocol.Args {
	var a protocol.Args
	a[protocol.ArgKey] = sh.Cfg.Prefix + "{check}"
	a[protocol.ArgChannel] = channel
	a[protocol.ArgPayload] = payload
	a[protocol.ArgCommands] = sh.CheckCommands
	return &a
}
