package goredis

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktag/locktag/locker/driver"
)

// call is one script call: its command and, while it waits in a pipe, its
// place there. Calls are recycled (callPool): the argument list, the
// signal channel and the timer are made once, and a call costs the
// command and its reply.
type call struct {
	cmd  *redis.Cmd
	argv [maxArgs]any // the argument list's storage, for the usual script call
	// cmds are commands made on argv, by argument count, for reuse (see
	// prepare).
	cmds [maxArgs + 1]*redis.Cmd

	// deadline is ctx's when has (set by the pipe for a call it queues).
	deadline time.Time
	has      bool
	t        *time.Timer   // bounds a wait in a pipe; made on first need
	done     chan struct{} // cap 1: answered, or handed the lead (pipe.go)

	// Guarded by the pipe's mu.
	state     callState
	abandoned bool    // its caller stopped waiting: drop the reply
	batch     []*call // when leading: the calls to send, itself first
	h         *held   // when leading: the connection to send them on
}

type callState uint8

const (
	idle     callState = iota // not in a pipe
	queued                    // waiting for a connection
	batched                   // in a batch another call sends
	leading                   // handed a connection and a batch to send
	finished                  // answered by a batch's leader
)

// maxArgs is the arguments of the longest command made on a call's own
// storage.
const maxArgs = 16

var callPool = sync.Pool{New: func() any { return &call{done: make(chan struct{}, 1)} }}

func getCall() *call { return callPool.Get().(*call) }

// putCall recycles c, answered and out of every pipe. Nothing of the call
// stays referenced: its arguments are cleared (the kept commands' too: they
// are argv) and so are the kept commands' replies.
func putCall(c *call) {
	clear(c.argv[:])
	if c.cmd != nil {
		if n := len(c.cmd.Args()); n < len(c.cmds) && c.cmds[n] == c.cmd {
			c.cmd.SetErr(nil)
			c.cmd.SetVal(nil)
		}
	}
	c.cmd = nil
	c.state, c.abandoned, c.has = idle, false, false
	callPool.Put(c)
}

// numKeys are the key counts as arguments, boxed once; a string, not an
// int, so that go-redis finds a Cluster key's position without formatting
// it (the wire carries the same bulk string either way).
var numKeys = [...]any{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15", "16"}

// prepare makes c's command: EVALSHA (byHash) or EVAL of s on keys with
// args. The arguments the core boxed once (keys, script hash and source)
// go in as they are. With reuse, a command c made earlier with as many
// arguments is made again in place: its arguments are argv, written
// anew. Only for a plain client's connections: a Cluster client keeps a
// command's slot in it.
func (c *call) prepare(ctx context.Context, s *driver.Script, keys driver.Keys, args []any, byHash, reuse bool) {
	a := c.argv[:0]
	if byHash {
		a = append(a, "evalsha", s.HashArg())
	} else {
		a = append(a, "eval", s.SourceArg())
	}
	if n := keys.Len(); n < len(numKeys) {
		a = append(a, numKeys[n])
	} else {
		a = append(a, n)
	}
	a = append(a, keys.Args()...)
	a = append(a, args...)
	var keyPos int8
	if keys.Len() > 0 {
		keyPos = 3
	}
	if n := len(a); reuse && n <= len(c.argv) {
		if c.cmds[n] == nil {
			// context.Background: a kept command must not keep its first
			// caller's context (go-redis runs it with the one it is given).
			c.cmds[n] = redis.NewCmd(context.Background(), a...)
		}
		c.cmd = c.cmds[n]
		c.cmd.SetErr(nil)
		c.cmd.SetVal(nil)
		c.cmd.SetFirstKeyPos(keyPos)
		return
	}
	c.cmd = redis.NewCmd(ctx, a...)
	c.cmd.SetFirstKeyPos(keyPos)
}

// signal wakes c's caller; c's channel has room (one signal at a time).
func (c *call) signal() { c.done <- struct{}{} }

// expiry returns a channel that fires at c's deadline, nil without one.
func (c *call) expiry() <-chan time.Time {
	if !c.has {
		return nil
	}
	d := time.Until(c.deadline)
	if c.t == nil {
		c.t = time.NewTimer(d)
	} else {
		c.t.Reset(d)
	}
	return c.t.C
}

func (c *call) stopTimer() {
	if c.has && c.t != nil {
		c.t.Stop()
	}
}
