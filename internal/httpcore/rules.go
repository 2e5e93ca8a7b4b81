package httpcore

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/locker/guard"
)

// RuleTable is what an adapter's LockRules serves: method -> route ->
// the route's guard, two lookups per request and no allocation.
type RuleTable[R any] map[string]map[string]*guard.Lock[R]

// Lookup returns the guard of method and route, or nil.
func (t RuleTable[R]) Lookup(method, route string) *guard.Lock[R] { return t[method][route] }

// RuleSyntax is what an adapter's rules look like and how they are
// checked: Prefix begins a rule's error ("lockecho"), Route names the
// route form in a malformed key's error ("pattern" for Gin, "path" for
// Echo), Params returns the parameter names of a route and Check fails
// for a tag whose {path.X} names none of them.
type RuleSyntax struct {
	Prefix, Route string
	Params        func(route string) []string
	Check         func(spec *keyexpr.Spec, params []string) error
}

// CompileRules compiles rules ("METHOD /route" -> tag) in sorted key
// order with compile, checks each tag against its route's parameters, and
// returns the table or the first error: a malformed key (wrapping
// ErrBadRule), or compile's or Check's error wrapped with the rule's key.
func CompileRules[R any](rules map[string]string, syn RuleSyntax, compile func(tag string) (*guard.Lock[R], error)) (RuleTable[R], error) {
	table := make(RuleTable[R])
	for _, k := range slices.Sorted(maps.Keys(rules)) {
		method, route, err := splitRule(k, syn.Route)
		if err != nil {
			return nil, err
		}
		g, err := compile(rules[k])
		if err == nil {
			err = syn.Check(g.Spec(), syn.Params(route))
		}
		if err != nil {
			return nil, fmt.Errorf("%s: rule %q: %w", syn.Prefix, k, err)
		}
		if table[method] == nil {
			table[method] = make(map[string]*guard.Lock[R])
		}
		table[method][route] = g
	}
	return table, nil
}

// splitRule splits "METHOD /route"; form names the route in the error.
func splitRule(k, form string) (method, route string, err error) {
	method, route, ok := strings.Cut(k, " ")
	if !ok || method == "" || strings.TrimFunc(method, isUpper) != "" ||
		!strings.HasPrefix(route, "/") || strings.ContainsAny(route, " \t") {
		return "", "", fmt.Errorf("%w %q: want \"METHOD /route/%s\", e.g. \"POST /orders/:id/pay\"", ErrBadRule, k, form)
	}
	return method, route, nil
}

func isUpper(r rune) bool { return 'A' <= r && r <= 'Z' }

// MissingRoutes reports, wrapping ErrBadRule, the keys of rules that are
// not in routes (the set of "METHOD /route" an adapter's router has), in
// sorted order; nil if there are none.
func MissingRoutes(rules map[string]string, routes map[string]bool) error {
	var missing []string
	for k := range rules {
		if !routes[k] {
			missing = append(missing, k)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	slices.Sort(missing)
	return fmt.Errorf("%w: no route registered for %q", ErrBadRule, missing)
}

// EchoParams returns the parameter names of an Echo route path (Echo v4
// and v5 alike) as Echo's router names them: a ':' starts a parameter
// that runs to the next '/' (unless escaped as "\\:"), and '*' is the
// parameter "*": "/orders/:id/files/*" has id and *.
func EchoParams(path string) []string {
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
