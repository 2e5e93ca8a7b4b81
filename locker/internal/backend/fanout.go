package backend

import (
	"context"
	"sync"
	"time"

	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/internal/lockerr"
	"github.com/locktag/locktag/locker/internal/tally"
)

// Fanout runs s on every node in parallel, each call bounded by timeout,
// and returns each node's reply in order: every Redlock call and every
// operator call goes through it.
func Fanout(ctx context.Context, nodes []*Node, timeout time.Duration, s *driver.Script, keys driver.Keys, args ...any) []tally.Reply {
	res := make([]tally.Reply, len(nodes))
	var wg sync.WaitGroup
	for i, nd := range nodes {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			res[i].V, res[i].Err = nd.Drv.Eval(cctx, s, keys, args...)
			if p := lockerr.AsProtocol(res[i].Err); p != nil {
				res[i].Err = p // a refused record of another protocol, said so
			}
		})
	}
	wg.Wait()
	return res
}
