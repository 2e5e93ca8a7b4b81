package backend

import (
	"context"
	"sync"
	"time"

	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/internal/lockerr"
	"github.com/locktag/locktag/locker/internal/protocol"
	"github.com/locktag/locktag/locker/internal/tally"
)

// Fanout runs c with keys and a on every node in parallel, each call
// bounded by timeout, and returns each node's reply in order: every
// Redlock call and every operator call goes through it.
func Fanout(ctx context.Context, nodes []*Node, timeout time.Duration, c *protocol.Call, keys driver.Keys, a *protocol.Args) []tally.Reply {
	res := make([]tally.Reply, len(nodes))
	args := c.Append(nil, a)
	var wg sync.WaitGroup
	for i, nd := range nodes {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			res[i].V, res[i].Err = nd.Drv.Eval(cctx, c.Script, keys, args...)
			if p := lockerr.AsProtocol(res[i].Err); p != nil {
				res[i].Err = p // a refused record of another protocol, said so
			}
		})
	}
	wg.Wait()
	return res
}
