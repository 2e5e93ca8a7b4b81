package middleware

import (
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/middleware/internal/httpcore"
)

// Rules maps routes to lock tags for LockRules. A key is an upper-case HTTP
// method, one space and the route pattern exactly as registered with Gin
// (what c.FullPath returns), e.g.
//
//	middleware.Rules{
//		"POST /orders/:id/pay":  `key:"order:{path.id}" wait:"2s"`,
//		"PUT /carts/:user/items": `key:"cart:{path.user}"`,
//	}
type Rules map[string]string

// LockRules returns one global middleware that locks the routes in rules,
// each with its tag, exactly as Lock would; other routes, and requests that
// match no route, pass through untouched. Install it with r.Use before the
// routes are served. The options apply to every rule; rules that need others
// go in a second LockRules. Every rule is checked here (its key, its tag, each
// {path.X} against the rule's route) and LockRules panics with the first
// error, in sorted key order, that NewLockRules would return. Rules.Check
// finds rules that name no registered route. Guide: docs/gin.md.
func LockRules(l *locker.Locker, rules Rules, opts ...Option) gin.HandlerFunc {
	return httpcore.Must(NewLockRules(l, rules, opts...))
}

// rules is the middleware of one LockRules.
func (m *locks) rules(table httpcore.RuleTable[*gin.Context]) gin.HandlerFunc {
	return func(c *gin.Context) {
		if g := table.Lookup(c.Request.Method, c.FullPath()); g != nil && probeOf(c) == nil {
			m.serve(c, g)
		}
	}
}

// Check reports, wrapping ErrBadRule, the rules that name no route in
// routes — usually a typo, which would otherwise leave a route unlocked
// without a word. Call it after registering the routes:
//
//	if err := rules.Check(r.Routes()); err != nil { log.Fatal(err) }
func (r Rules) Check(routes gin.RoutesInfo) error {
	have := make(map[string]bool, len(routes))
	for _, ri := range routes {
		have[ri.Method+" "+ri.Path] = true
	}
	return httpcore.MissingRoutes(r, have)
}

// routeParams returns the parameter names of a Gin route pattern:
// "/orders/:id/files/*path" has id and path.
func routeParams(pattern string) []string {
	params := []string{}
	for _, seg := range strings.Split(pattern, "/") {
		if len(seg) > 1 && (seg[0] == ':' || seg[0] == '*') {
			params = append(params, seg[1:])
		}
	}
	return params
}
