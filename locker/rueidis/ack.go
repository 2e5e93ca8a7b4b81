package rueidis

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/locktag/locktag/locker/driver"
)

// EvalAck runs s and then WAIT replicas timeout, written together on one
// dedicated connection (driver.Acker): WAIT counts the replicas that have
// every write of its connection, the script's included, and it holds its
// connection until they answer, so it never goes on the auto-pipelined
// connection every other call shares. On a Cluster the connection is to
// the master of the keys' slot; on a Sentinel set-up, to the current
// master. The connection comes from rueidis' pool for blocking commands
// (ClientOption.BlockingPoolSize).
func (d *rueidisDriver) EvalAck(ctx context.Context, replicas int, timeout time.Duration, s *driver.Script, keys driver.Keys, args ...any) (any, int, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, driver.NotSent(err)
	}
	c, err := d.src.client(ctx)
	if err != nil {
		return nil, 0, driver.NotSent(err)
	}
	waitMS := max(timeout.Milliseconds(), 1)
	dc, release, err := dedicate(ctx, c)
	if err != nil {
		return nil, 0, err
	}
	defer release()
	cmd, err := evalsha(dc.B(), s, keys, args)
	if err != nil {
		return nil, 0, err
	}
	v, acked, err := roundTripAck(ctx, dc, cmd, replicas, waitMS)
	if isNoScript(err) {
		if cmd, err = eval(dc.B(), s, keys, args); err != nil {
			return nil, 0, err
		}
		v, acked, err = roundTripAck(ctx, dc, cmd, replicas, waitMS)
	}
	if err != nil {
		return nil, 0, err
	}
	return v, acked, nil
}

// roundTripAck writes cmd and WAIT together and reads both replies; a
// failed WAIT (a broken connection, the deadline) is the error even when
// cmd's reply arrived.
func roundTripAck(ctx context.Context, dc rueidis.DedicatedClient, cmd rueidis.Completed, replicas int, waitMS int64) (any, int, error) {
	res := dc.DoMulti(ctx, cmd, dc.B().Wait().Numreplicas(int64(replicas)).Timeout(waitMS).Build())
	n, werr := res[1].AsInt64()
	if werr != nil {
		if err := res[0].Error(); err != nil && !rueidis.IsRedisNil(err) {
			werr = err // the script's error says more (NOSCRIPT, a broken connection)
		}
		if sentNothing(werr) {
			werr = driver.NotSent(werr)
		}
		return nil, 0, fmt.Errorf("rueidis: WAIT: %w", werr)
	}
	v, err := reply(res[0])
	return v, int(n), err
}
