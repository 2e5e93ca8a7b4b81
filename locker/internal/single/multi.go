package single

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/internal/protocol"
)

// ObtainMany's one-script path (backend.MultiFast): on a deployment whose
// keys all live on one node and whose scripts may name keys of several
// slots, one round trip takes every lock when all are free. It is turned
// off for good on the first CROSSSLOT error (a driver that reaches a
// Cluster without saying so).

// TakeAll runs multi_acquire.lua over ns (see backend.MultiFast).
func (b *Backend) TakeAll(ctx context.Context, ns []protocol.Names, tokens []string, ttl time.Duration) ([]int64, bool, error) {
	if !b.multi.Load() {
		return nil, false, nil
	}
	keys := make([]string, 0, 2*len(ns))
	each := make([]any, len(ns))
	for i, n := range ns {
		all := n.Keys.Names()
		keys = append(keys, all[0], all[1]) // lock, queue
		each[i] = tokens[i]
	}
	var args protocol.Args
	args[protocol.ArgTTLMS] = protocol.MS(ttl)
	args[protocol.ArgTokens] = each
	args[protocol.ArgLabel] = ns[0].LabelArg // one label for every key
	cctx, cancel := b.Cfg.Bounds.Call(ctx)
	defer cancel()
	v, err := protocol.MultiAcquire.Eval(cctx, b.nd.Drv, driver.NewKeys(keys...), &args)
	if err != nil {
		if strings.Contains(err.Error(), "CROSSSLOT") {
			b.multi.Store(false) // refused before it ran: nothing to clean up
			return nil, false, nil
		}
		return nil, false, err
	}
	a, ok := v.([]any)
	if !ok {
		return nil, false, nil // 0: busy
	}
	fences := make([]int64, len(a))
	for i, x := range a {
		fences[i], _ = x.(int64)
	}
	if len(fences) != len(ns) {
		return nil, false, errors.New("locker: unexpected multi_acquire reply")
	}
	return fences, true, nil
}

// DropAll cleans up after a TakeAll whose outcome is unknown (err).
func (b *Backend) DropAll(ns []protocol.Names, tokens []string, err error) {
	for i, n := range ns {
		b.abandon(n, tokens[i], err)
	}
}

// FastOn reports whether the one-script path is on.
func (b *Backend) FastOn() bool { return b.multi.Load() }
