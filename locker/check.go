package locker

import (
	"context"
	"strings"

	"github.com/locktag/locktag/locker/internal/node"
	"github.com/locktag/locktag/locker/internal/scripts"
)

// clientCommands are what the drivers send besides the scripts' own.
var clientCommands = []string{"EVALSHA", "EVAL", "SUBSCRIBE", "UNSUBSCRIBE", "PING"}

// ACLRules returns Redis ACL rules that allow this Locker everything it
// does and nothing else: its keys and channels (WithKeyPrefix), the
// scripting and pub/sub commands the drivers send, and the commands its
// scripts call. Append them to ACL SETUSER name on >password; a client
// library may need a few more (go-redis: see docs/servers.md).
func (l *Locker) ACLRules() []string {
	p := l.o.prefix
	rules := []string{"resetkeys", "~" + p + "*", "resetchannels", "&" + p + "*"}
	if !strings.HasPrefix(strings.TrimSuffix(node.ListenerChannels, "*"), p) {
		rules = append(rules, "&"+node.ListenerChannels)
	}
	rules = append(rules, "-@all")
	for _, c := range clientCommands {
		rules = append(rules, "+"+strings.ToLower(c))
	}
	for _, c := range scripts.Commands() {
		rules = append(rules, "+"+strings.ToLower(c))
	}
	return rules
}

// Check confirms that the Redis deployment can serve this Locker, as the
// user it logs in as: on every node (every master of a Cluster or of
// Redlock) scripts run by EVALSHA and, after NOSCRIPT, by EVAL; the
// commands its scripts call are allowed on its keys (Redis 7 and later
// tell; TIME is tried everywhere); and a subscriber connection opens and
// receives what a script publishes. New does no I/O; run Check at
// start-up (Ping and Healthy run it too, until it has passed once).
//
// It returns nil; an error matching ErrUnsupported that names each thing
// missing and what to allow; or an error matching ErrUnavailable when a
// node did not answer. Each call runs two scripts per master and opens and
// closes one subscriber connection per node, bounded by ctx and
// WithCallTimeout.
func (l *Locker) Check(ctx context.Context) error { return l.be.Check(ctx) }
