package locker

import (
	"context"

	"github.com/locktag/locktag/locker/internal/admin"
)

// ACLRules returns Redis ACL rules that allow this Locker everything it
// does and nothing else: its keys and channels (WithKeyPrefix), the
// scripting and pub/sub commands the drivers send, and the commands its
// scripts call. Append them to ACL SETUSER name on >password; a client
// library may need a few more (go-redis: see docs/servers.md).
func (l *Locker) ACLRules() []string { return admin.ACLRules(l.o.prefix) }

// Check confirms that the Redis deployment can serve this Locker as the
// user it logs in as: on every node scripts run (EVALSHA, then EVAL after
// NOSCRIPT), the commands its scripts call are allowed on its keys, and a
// subscriber connection receives what a script publishes. New does no
// I/O: run Check at start-up (Ping and Healthy run it until it passed).
// It returns nil, an error matching ErrUnsupported naming what to allow,
// or one matching ErrUnavailable. See docs/servers.md.
func (l *Locker) Check(ctx context.Context) error { return l.be.Check(ctx) }
