package admin

import (
	"strings"

	"github.com/locktag/locktag/locker/internal/preflight"
	"github.com/locktag/locktag/locker/internal/protocol"
)

// clientCommands are what the drivers send besides the scripts' own, and
// INFO, which the start-up check's script reads maxmemory-policy with.
var clientCommands = []string{"EVALSHA", "EVAL", "SUBSCRIBE", "UNSUBSCRIBE", "PING", "INFO"}

// ACLRules are the Redis ACL rules that allow a Locker with key prefix p
// everything it does and nothing else (locker.Locker.ACLRules).
func ACLRules(p string) []string {
	rules := []string{"resetkeys", "~" + p + "*", "resetchannels", "&" + p + "*"}
	if !strings.HasPrefix(strings.TrimSuffix(preflight.ListenerChannels, "*"), p) {
		rules = append(rules, "&"+preflight.ListenerChannels)
	}
	rules = append(rules, "-@all")
	for _, c := range clientCommands {
		rules = append(rules, "+"+strings.ToLower(c))
	}
	for _, c := range protocol.Commands() {
		rules = append(rules, "+"+strings.ToLower(c))
	}
	return rules
}
