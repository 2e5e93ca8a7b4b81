package preflight

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/internal/backend"
	"github.com/locktag/locktag/locker/internal/callctx"
	"github.com/locktag/locktag/locker/internal/protocol"
)

// A replica's settings matter once a failover promotes it: a replica
// with an evicting maxmemory-policy evicts, as a master, a held lock's
// key and grants the lock again. Check and ReadFacts read them on every
// replica the node's driver lists (driver.Replicas) with facts.lua, a
// script flagged no-writes that a read-only replica runs.

// replicaProbe is what facts.lua said on one replica, or why it did not.
type replicaProbe struct {
	addr string
	f    checkFindings
	// noWay: the driver has no way to reach the replica (driver.Replica.Err).
	noWay error
	// err: the call failed (the replica did not answer, or refused it).
	err error
}

// probeReplicas runs facts.lua on every replica nd's driver lists,
// all at once, and closes the drivers it was given. It returns the
// probes by address; none when the driver offers no driver.Replicas, and
// the driver's error when it could not list them.
func probeReplicas(ctx context.Context, nd *backend.Node) ([]replicaProbe, error) {
	d := nd.Drv
	if bd, ok := d.(*callctx.Limited); ok {
		d = bd.Driver // WithMaxConcurrentCalls's wrapper hides the driver's Replicas
	}
	rd, ok := d.(driver.Replicas)
	if !ok {
		return nil, nil
	}
	rs, err := rd.Replicas(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]replicaProbe, len(rs))
	var wg sync.WaitGroup
	for i, r := range rs {
		out[i].addr = r.Addr
		if r.Driver == nil {
			out[i].noWay = r.Err
			if r.Err == nil {
				out[i].noWay = errors.New("the driver named no way to reach it")
			}
			continue
		}
		// At once: a replica that does not answer costs the call's
		// deadline once, not once per replica after it.
		wg.Go(func() {
			defer func() { _ = callctx.CloseDriver(r.Driver) }()
			v, err := protocol.Facts.Eval(ctx, r.Driver, driver.Keys{}, &protocol.Args{})
			if err == nil {
				out[i].f, err = checkReply(v)
			}
			out[i].err = err
		})
	}
	wg.Wait()
	// Drivers list them so already; the order of ReadFacts depends on it.
	slices.SortFunc(out, func(a, b replicaProbe) int { return strings.Compare(a.addr, b.addr) })
	return out, nil
}

// checkReplicas reads every replica's settings for Check and returns the
// refusals: one per replica whose maxmemory-policy may evict a held lock,
// unless WithEvictionAllowed (then a risk). A replica the driver cannot
// reach at all, or whose settings this user may not read, is a risk; one
// that did not answer is skipped (Hooks.Skipped).
func checkReplicas(ctx context.Context, nd *backend.Node) []string {
	ps, err := probeReplicas(ctx, nd)
	if err != nil {
		skipped(nd.Sh, "replicas not listed, so not checked: "+err.Error())
		return nil
	}
	var refused []string
	for _, p := range ps {
		name := "replica " + p.addr
		switch {
		case p.noWay != nil:
			risk(nd.Sh, name+" not checked ("+p.noWay.Error()+"): a failover may promote it, so keep its maxmemory-policy noeviction (or no maxmemory)")
		case p.err != nil:
			if msg, ok := refusal(p.err); ok {
				risk(nd.Sh, name+" refused the script that reads its settings ("+strings.TrimSpace(msg)+"), so Check cannot read its maxmemory-policy: allow +evalsha +eval +info for this user there, and keep the policy noeviction")
			} else {
				skipped(nd.Sh, name+" not checked: it did not answer ("+p.err.Error()+")")
			}
		case p.f.infoDenied:
			risk(nd.Sh, "INFO is refused to this user on "+name+", so Check cannot read its maxmemory-policy: allow +info, and keep the policy noeviction (an evicted lock key is granted again once a failover promotes it)")
		case p.f.evicting != "":
			what := name + ": maxmemory-policy " + p.f.evicting + " with a maxmemory: once a failover promotes it, Redis may evict a held lock's key and grant the lock again while its holder runs"
			if nd.Sh.Cfg.AllowEviction {
				risk(nd.Sh, what+"; accepted by locker.WithEvictionAllowed")
			} else {
				refused = append(refused, what+": set maxmemory-policy noeviction (or no maxmemory) on every replica too, or accept the risk with locker.WithEvictionAllowed")
			}
		}
	}
	return refused
}

// replicaFacts are the facts of every replica that answered, by address.
func replicaFacts(ctx context.Context, nd *backend.Node) []Facts {
	ps, _ := probeReplicas(ctx, nd) // the masters answered; replicas are read where they answer
	var out []Facts
	for _, p := range ps {
		if p.noWay != nil || p.err != nil {
			continue
		}
		f := p.f.facts
		f.Replica, f.Addr = true, p.addr
		out = append(out, f)
	}
	return out
}
