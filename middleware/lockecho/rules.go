package lockecho

import (
	"github.com/labstack/echo/v4"

	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/middleware/lockecho/internal/httpcore"
)

// Rules maps routes to lock tags for LockRules. A key is an upper-case HTTP
// method, one space and the route path exactly as registered with Echo
// (what c.Path returns), e.g.
//
//	lockecho.Rules{
//		"POST /orders/:id/pay":   `key:"order:{path.id}" wait:"2s"`,
//		"PUT /carts/:user/items": `key:"cart:{path.user}"`,
//	}
type Rules map[string]string

// LockRules returns one middleware that locks the routes in rules, each with
// its tag, exactly as Lock would; other routes, and requests that match no
// route, pass through untouched. Install it with e.Use (not e.Pre: it needs
// the route). The options apply to every rule; rules that need others go in a
// second LockRules. Every rule is checked here (its key, its tag, each
// {path.X} against the rule's route) and LockRules panics with the first
// error, in sorted key order, that NewLockRules would return. Rules.Check
// finds rules that name no registered route. Guide: docs/echo.md.
func LockRules(l *locker.Locker, rules Rules, opts ...Option) echo.MiddlewareFunc {
	mw, err := NewLockRules(l, rules, opts...)
	if err != nil {
		panic(err)
	}
	return mw
}

// NewLockRules is like LockRules but returns construction errors instead of
// panicking: guard.ErrNilLocker, errors wrapping locker.ErrBadOption or
// ErrBadRule, or a *keyexpr.TagError (wrapped with the rule's key) for a bad
// tag.
func NewLockRules(l *locker.Locker, rules Rules, opts ...Option) (echo.MiddlewareFunc, error) {
	m, err := newLocks(l, opts)
	if err != nil {
		return nil, err
	}
	table, err := httpcore.CompileRules(rules, httpcore.RuleSyntax{
		Prefix: "lockecho", Route: "path", Params: httpcore.EchoParams, Check: m.checkParams,
	}, m.compile)
	if err != nil {
		return nil, err
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if g := table.Lookup(c.Request().Method, c.Path()); g != nil {
				return m.serve(c, next, g)
			}
			return next(c)
		}
	}, nil
}

// Check reports, wrapping ErrBadRule, the rules that name no route in
// routes — usually a typo, which would otherwise leave a route unlocked
// without a word. Call it after registering the routes:
//
//	if err := rules.Check(e.Routes()); err != nil { log.Fatal(err) }
func (r Rules) Check(routes []*echo.Route) error {
	have := make(map[string]bool, len(routes))
	for _, ri := range routes {
		have[ri.Method+" "+ri.Path] = true
	}
	return httpcore.MissingRoutes(r, have)
}

// checkParams fails, with a *keyexpr.TagError wrapping ErrBadRule, for a
// {path.X} in spec whose X is not one of params, unless the application
// replaced the path source.
func (m *locks) checkParams(spec *keyexpr.Spec, params []string) error {
	if _, custom := m.s.Sources["path"]; custom {
		return nil
	}
	return httpcore.CheckParams(spec, params, ":", "")
}
