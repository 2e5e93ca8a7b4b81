package driver

import (
	"context"
	"time"
)

// Acker is implemented by a Driver that can confirm a script's writes on
// replicas (locker.WithReplicaAck). EvalAck runs s as Eval does, then
// WAIT replicas timeout on the same connection, written together with the
// script (one round trip). It returns the script's reply and WAIT's count;
// a script's error reply is the error, as from Eval. A WAIT whose reply did
// not arrive (the connection broke, the deadline passed) is an error too.
// WAIT holds its connection for up to timeout, so a driver that shares one
// connection among concurrent calls runs EvalAck on a connection of its
// own. See docs/architecture.md#writing-a-driver.
type Acker interface {
	EvalAck(ctx context.Context, replicas int, timeout time.Duration, s *Script, keys Keys, args ...any) (v any, acked int, err error)
}
