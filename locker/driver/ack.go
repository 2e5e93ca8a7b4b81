package driver

import (
	"context"
	"time"
)

// Acker is implemented by a Driver that can confirm a script's writes on
// replicas (locker.WithReplicaAck). EvalAck runs s as Eval does, then
// WAIT replicas timeout on the same connection, written together with the
// script (one round trip), so that WAIT counts the replicas that have
// every write of that connection — the script's included. It returns the
// script's reply and WAIT's count; a script's error reply is the error,
// as from Eval. A WAIT whose reply did not arrive (the connection broke,
// the deadline passed) is an error too: the script's outcome is then
// unknown to the caller, which cleans up by token.
//
// WAIT holds its connection for up to timeout, so a driver that shares one
// connection among concurrent calls (redigo's pipelined default) runs
// EvalAck on a connection of its own.
type Acker interface {
	EvalAck(ctx context.Context, replicas int, timeout time.Duration, s *Script, keys Keys, args ...any) (v any, acked int, err error)
}
