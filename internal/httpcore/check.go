package httpcore

import (
	"fmt"
	"slices"
	"strings"

	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/locker/guard"
)

// ErrBadRule is the adapters' ErrBadRule: guard.ErrBadRule.
var ErrBadRule = guard.ErrBadRule

// CheckParams fails, with a *keyexpr.TagError wrapping ErrBadRule, for a
// {path.X} in spec whose X is not one of params. mark is how the router
// writes a parameter (":" for Gin, "{" and "}" for ServeMux).
func CheckParams(spec *keyexpr.Spec, params []string, mark, end string) error {
	for i, t := range spec.Templates() { // one, or each of a `keys` tag's
		for _, ph := range t.Placeholders() {
			if ph.Source == "path" && !slices.Contains(params, ph.Path) {
				has := "none"
				if len(params) > 0 {
					has = mark + strings.Join(params, end+", "+mark) + end
				}
				return spec.KeyErrorAt(i, &keyexpr.TemplateError{Template: t.String(), Placeholder: ph.String(), Pos: ph.Pos,
					Err: &detailError{ErrBadRule, fmt.Sprintf("the rule's route has no parameter %s%s%s (it has %s)", mark, ph.Path, end, has)}})
			}
		}
	}
	return nil
}

// detailError wraps a sentinel with a message of its own (without the
// sentinel's "guard: " prefix, which an enclosing error already says).
type detailError struct {
	sentinel error
	msg      string
}

func (e *detailError) Error() string { return e.msg }
func (e *detailError) Unwrap() error { return e.sentinel }
