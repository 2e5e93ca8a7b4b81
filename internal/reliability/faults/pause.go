package faults

import (
	"strconv"
	"time"
)

// Doer runs one Redis command; redistest.Server.Do is one.
type Doer interface {
	Do(cmd string, args ...any) (any, error)
}

// ClientPause runs CLIENT PAUSE for d on srv: every client's commands (or,
// with writesOnly, every write and script) stall until it ends or
// ClientUnpause. The connection that sends it is not paused.
func ClientPause(srv Doer, d time.Duration, writesOnly bool) error {
	mode := "ALL"
	if writesOnly {
		mode = "WRITE"
	}
	_, err := srv.Do("CLIENT", "PAUSE", strconv.FormatInt(d.Milliseconds(), 10), mode)
	return err
}

// ClientUnpause ends a CLIENT PAUSE early.
func ClientUnpause(srv Doer) error {
	_, err := srv.Do("CLIENT", "UNPAUSE")
	return err
}

// ACLSetUser creates or replaces the ACL user name with password pass and
// the given rules (e.g. "~locktag:*", "&locktag:*", "+@all"). The user is
// enabled and starts from no permissions ("reset").
func ACLSetUser(srv Doer, name, pass string, rules ...string) error {
	args := []any{"SETUSER", name, "reset", "on", ">" + pass}
	for _, r := range rules {
		args = append(args, r)
	}
	_, err := srv.Do("ACL", args...)
	return err
}
