package lockfiber

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/gofiber/fiber/v3"
	"github.com/valyala/fasthttp"

	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/middleware/lockfiber/internal/httpcore"
)

// CheckRoutes checks, before traffic, that the lock tags on app's routes
// can be resolved on them: every {path.X} must name a parameter of the
// route its Lock is registered on (:X, :X?, :X<constraint>; * and + for
// {path.*} and {path.+}), and a Lock registered with app.Use or a group
// prefix must not read {path.X} or {route} unless that Use route has them
// — a Use handler cannot see the route the request will match. Call it
// after the last route is registered:
//
//	if err := lockfiber.CheckRoutes(app); err != nil {
//		log.Fatal(err)
//	}
//
// It walks app.GetRoutes() and calls no handler but the Locks, which
// recognise the check and return at once. Errors are joined: each wraps
// ErrBadRule and names the method, route and a *keyexpr.TagError (tag,
// placeholder, position). Found at request time instead, such a tag is
// answered with 500 and logged. Routes of a mounted sub-app are app's only
// once it starts: check the sub-app itself. With a "path" WithSource the
// application reads path parameters itself and its {path.X} are not
// checked.
func CheckRoutes(app *fiber.App) error {
	if app == nil {
		return fmt.Errorf("%w: nil app", ErrNotChecked)
	}
	routes := make(map[*fiber.Handler]bool) // the non-Use routes, by their handlers' array
	for _, r := range app.GetRoutes(true) {
		if len(r.Handlers) > 0 {
			routes[&r.Handlers[0]] = true
		}
	}
	seen := make(map[string]bool) // a GET route's HEAD twin shares its handlers
	var errs []error
	for _, r := range app.GetRoutes() {
		if len(r.Handlers) == 0 {
			continue
		}
		use := !routes[&r.Handlers[0]]
		for i, h := range r.Handlers {
			if reflect.ValueOf(h).Pointer() != lockCode {
				continue
			}
			id := fmt.Sprintf("%p %d %s", &r.Handlers[0], i, r.Path)
			if seen[id] {
				continue
			}
			seen[id] = true
			lh, err := identify(app, h)
			if err == nil {
				err = lh.m.check(lh.g.Spec(), r.Params, use)
			}
			where := ""
			if use {
				where = " (a Use handler)"
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("%w: %s %s%s: %w", ErrBadRule, r.Method, r.Path, where, err))
			}
		}
	}
	return errors.Join(errs...)
}

// lockCode is the code pointer of every Lock's handler.
var lockCode = reflect.ValueOf((&lockHandler{}).serve).Pointer()

// probeKey is the c.Locals key of CheckRoutes' question to a Lock.
type probeKey struct{}

// probe carries the answer.
type probe struct{ found *lockHandler }

// identify asks the Lock handler h which lock it is, on a context of its
// own that no other handler sees.
func identify(app *fiber.App, h fiber.Handler) (*lockHandler, error) {
	cc := app.AcquireCtx(&fasthttp.RequestCtx{})
	defer app.ReleaseCtx(cc)
	c, ok := cc.(fiber.Ctx)
	if !ok {
		return nil, fmt.Errorf("%w: the app's context type %T is not a fiber.Ctx", ErrNotChecked, cc)
	}
	p := &probe{}
	c.Locals(probeKey{}, p)
	if err := h(c); err != nil || p.found == nil {
		return nil, fmt.Errorf("%w: a lock handler did not answer the check (%v)", ErrNotChecked, err)
	}
	return p.found, nil
}

// check fails, with a *keyexpr.TagError wrapping ErrBadRule, for a
// {path.X} in spec whose X is not one of the route's params (Fiber's
// names: *1 and +1 for the wildcards), and for a {route} in a Use
// handler, unless the application replaced the source.
func (m *locks) check(spec *keyexpr.Spec, params []string, use bool) error {
	if _, custom := m.s.Sources["route"]; use && !custom {
		for _, t := range spec.Templates() {
			for _, ph := range t.Placeholders() {
				if ph.Source == "route" {
					return fmt.Errorf("tag `%s`: {route} in a handler registered with Use is the Use prefix, not the request's route: register the lock on the route", spec.Tag)
				}
			}
		}
	}
	if _, custom := m.s.Sources["path"]; custom {
		return nil
	}
	return httpcore.CheckParams(spec, paramNames(params), ":", "")
}

// paramNames turns Fiber's parameter names into a tag's: the wildcards *1
// and +1 are {path.*} and {path.+} (c.Params accepts either), *2 stays *2.
func paramNames(params []string) []string {
	out := make([]string, 0, len(params)+2)
	for _, p := range params {
		out = append(out, p)
		if p == "*1" || p == "+1" {
			out = append(out, p[:1])
		}
	}
	return out
}
