package lockecho

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
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

// LockRules returns one middleware that locks the routes in rules, each
// with its tag, exactly as Lock would; other routes (and requests that
// match no route) pass through untouched. Install it with e.Use (not
// e.Pre: Echo routes between the two, and LockRules needs the route). The
// options apply to every rule; for per-rule options such as
// guard.WithFailOpen, install a second LockRules with the rules that need
// them.
//
// Every rule is checked here — its key's form, its tag, and that each
// {path.X} names a parameter of the rule's route — and LockRules panics with
// the first error (in sorted key order) that NewLockRules would return. Use
// Rules.Check to verify that every rule names a registered route.
func LockRules(l *locker.Locker, rules Rules, opts ...Option) echo.MiddlewareFunc {
	mw, err := NewLockRules(l, rules, opts...)
	if err != nil {
		panic(err)
	}
	return mw
}

// NewLockRules is like LockRules but returns construction errors instead of
// panicking: guard.ErrNilLocker, errors wrapping guard.ErrBadOption or
// ErrBadRule, or a *keyexpr.TagError (wrapped with the rule's key) for a bad
// tag.
func NewLockRules(l *locker.Locker, rules Rules, opts ...Option) (echo.MiddlewareFunc, error) {
	m, err := newLocks(l, opts)
	if err != nil {
		return nil, err
	}
	// method -> route path -> guard: two lookups per request, no
	// allocation.
	table := make(map[string]map[string]*guard.Lock[echo.Context])
	for _, k := range slices.Sorted(maps.Keys(rules)) {
		method, path, err := splitRule(k)
		if err != nil {
			return nil, err
		}
		g, err := m.compile(rules[k])
		if err == nil {
			err = m.checkParams(g.Spec(), routeParams(path))
		}
		if err != nil {
			return nil, fmt.Errorf("lockecho: rule %q: %w", k, err)
		}
		if table[method] == nil {
			table[method] = make(map[string]*guard.Lock[echo.Context])
		}
		table[method][path] = g
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if g := table[c.Request().Method][c.Path()]; g != nil {
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
	var missing []string
	for k := range r {
		if !have[k] {
			missing = append(missing, k)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	slices.Sort(missing)
	return fmt.Errorf("%w: no route registered for %q", ErrBadRule, missing)
}

// splitRule splits "METHOD /path".
func splitRule(k string) (method, path string, err error) {
	method, path, ok := strings.Cut(k, " ")
	if !ok || method == "" || strings.TrimFunc(method, isUpper) != "" ||
		!strings.HasPrefix(path, "/") || strings.ContainsAny(path, " \t") {
		return "", "", fmt.Errorf("%w %q: want \"METHOD /route/path\", e.g. \"POST /orders/:id/pay\"", ErrBadRule, k)
	}
	return method, path, nil
}

func isUpper(r rune) bool { return 'A' <= r && r <= 'Z' }

// routeParams returns the parameter names of an Echo route path as Echo's
// router names them: a ':' starts a parameter that runs to the next '/'
// (unless escaped as "\\:"), and '*' is the parameter "*":
// "/orders/:id/files/*" has id and *.
func routeParams(path string) []string {
	params := []string{}
	for i := 0; i < len(path); i++ {
		switch {
		case path[i] == '\\' && i+1 < len(path) && path[i+1] == ':':
			i++
		case path[i] == ':':
			j := i + 1
			for j < len(path) && path[j] != '/' {
				j++
			}
			params = append(params, path[i+1:j])
			i = j - 1
		case path[i] == '*':
			params = append(params, "*")
		}
	}
	return params
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
