package lockfiber

import (
	"errors"
	"fmt"
	"reflect"
	"slices"

	"github.com/gofiber/fiber/v3"
	"github.com/valyala/fasthttp"

	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/middleware/lockfiber/internal/httpcore"
)

// CheckRoutes checks the lock tags on app's routes, before or after they are
// added: those app has when it is called (app.GetRoutes()) and each one
// added later, as it is added (app.Hooks().OnRoute). Every {path.X} must name
// a parameter of the route its Lock is on, and a Lock in app.Use or a group
// prefix must not read {path.X} or {route} that its Use route lacks. A bad
// tag added later makes its registration (app.Post, app.Use, ...) panic; the
// routes app has give joined errors, each wrapping ErrBadRule. A nil app is
// an error wrapping ErrNotChecked; calling it again is harmless. Check a
// mounted sub-app before mounting it. Guide: docs/fiber.md, docs/routes.md.
func CheckRoutes(app *fiber.App) error {
	if app == nil {
		return fmt.Errorf("%w: nil app", ErrNotChecked)
	}
	hooks.GetOrPut(app, func() *routeHook {
		h := &routeHook{app: app}
		app.Hooks().OnRoute(h.added)
		return h
	})
	routes := nonUse(app)
	seen := make(map[string]bool) // a GET route's HEAD twin shares its handlers
	var errs []error
	for _, r := range app.GetRoutes() {
		if len(r.Handlers) == 0 {
			continue
		}
		errs = append(errs, checkRoute(app, r, !routes[&r.Handlers[0]], seen)...)
	}
	return errors.Join(errs...)
}

// nonUse returns the non-Use routes of app, by their handlers' array.
func nonUse(app *fiber.App) map[*fiber.Handler]bool {
	routes := make(map[*fiber.Handler]bool)
	for _, r := range app.GetRoutes(true) {
		if len(r.Handlers) > 0 {
			routes[&r.Handlers[0]] = true
		}
	}
	return routes
}

// checkRoute checks the Locks among r's handlers; use says r is a Use
// route. seen, when not nil, skips a Lock already checked on a route that
// shares r's handlers.
func checkRoute(app *fiber.App, r fiber.Route, use bool, seen map[string]bool) []error {
	var errs []error
	for i, h := range r.Handlers {
		if reflect.ValueOf(h).Pointer() != lockCode {
			continue
		}
		if seen != nil {
			id := fmt.Sprintf("%p %d %s", &r.Handlers[0], i, r.Path)
			if seen[id] {
				continue
			}
			seen[id] = true
		}
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
	return errs
}

// hooks finds the hook CheckRoutes installed on an app, so that it is
// installed once; it holds neither.
var hooks httpcore.PerRouter[fiber.App, routeHook]

// routeHook is CheckRoutes' OnRoute hook on one app.
type routeHook struct{ app *fiber.App }

// added checks a route as Fiber adds it; Fiber panics with the error.
func (h *routeHook) added(r fiber.Route) error {
	if len(r.Handlers) == 0 || !slices.ContainsFunc(r.Handlers, isLock) {
		return nil
	}
	return errors.Join(checkRoute(h.app, r, isUse(h.app, r), nil)...)
}

func isLock(h fiber.Handler) bool { return reflect.ValueOf(h).Pointer() == lockCode }

// isUse reports whether r, which Fiber is adding, is a Use route. Fiber
// keeps that unexported; a route is told by its handlers' array, which
// the copy the hook gets shares with the route in app's stack: among the
// non-Use routes, it is not a Use route; among the others, it is. One
// Fiber merged into the same method and path registered just before (its
// handlers appended there) is what that route is; one not in the stack
// yet (the HEAD twin of a GET route, added at start) is not a Use route.
func isUse(app *fiber.App, r fiber.Route) bool {
	routes := nonUse(app)
	if routes[&r.Handlers[0]] {
		return false
	}
	var last *fiber.Route // the latest route of r's method and path
	all := app.GetRoutes()
	for i := range all {
		if len(all[i].Handlers) == 0 {
			continue
		}
		if &all[i].Handlers[0] == &r.Handlers[0] {
			return true
		}
		if all[i].Method == r.Method && all[i].Path == r.Path {
			last = &all[i]
		}
	}
	return last != nil && !routes[&last.Handlers[0]]
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
	return m.checkParams(spec, paramNames(params))
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
