package lockfiber

import (
	"slices"
	"strings"

	"github.com/gofiber/fiber/v3"

	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/middleware/lockfiber/internal/httpcore"
)

// Every getter here returns a copy (strings.Clone): fasthttp hands out
// strings that alias the request's buffers, which the next request on the
// connection overwrites, and a resolved key outlives the handler (a keep
// tag's lock, a log record).

// getter is the request-time half of a source.
type getter = keyexpr.Getter[fiber.Ctx]

// sourceSet returns the built-in sources with the application's on top.
func (m *locks) sourceSet() keyexpr.Sources[fiber.Ctx] {
	return httpcore.Builtins(httpcore.Reader[fiber.Ctx]{
		Path:   pathGetter,
		Query:  func(n string) getter { return copied(func(c fiber.Ctx) string { return c.Query(n) }) },
		Form:   func(n string) getter { return copied(func(c fiber.Ctx) string { return c.FormValue(n) }) },
		Header: func(n string) getter { return copied(func(c fiber.Ctx) string { return c.Get(n) }) },
		Body:   func(path string) getter { return bodyGetter(path, &m.maxBody) },
		Method: copied(methodOf),
		Route:  func(c fiber.Ctx) (string, error) { return c.Route().Path, nil },
		IP:     copied(fiber.Ctx.IP),
	}, m.s.Sources)
}

// copied makes a getter of a read that aliases the request's buffers.
func copied(read func(c fiber.Ctx) string) getter {
	return func(c fiber.Ctx) (string, error) { return strings.Clone(read(c)), nil }
}

// methodOf is c.Method without its optional override.
func methodOf(c fiber.Ctx) string { return c.Method() }

// pathGetter reads a route parameter, decoded (paramValue): the value
// every locktag adapter gives for the request, whether or not the app
// sets UnescapePath — "a b" for /k/a%20b, "x/y+z" for /k/x%2Fy+z. A
// malformed escape is a 400. A route without the parameter is a mistake
// in the tag (ErrNoRouteParam, a 500), not in the request; an optional
// parameter (:id?) the request left out is an empty value (400). Fiber
// names the wildcards * and + of a route *1 and +1 (c.Params takes either
// form).
func pathGetter(name string) getter {
	return func(c fiber.Ctx) (string, error) {
		params := c.Route().Params
		if !hasParam(params, name) {
			return "", ErrNoRouteParam
		}
		if !c.App().Config().UnescapePath {
			return paramValue([]string{c.Params(name)}, 0, false, "", "")
		}
		vals, at := make([]string, len(params)), -1
		for i, p := range params {
			vals[i] = c.Params(p)
			if at < 0 && (p == name || (len(p) == 2 && p[1] == '1' && p[:1] == name)) { // *1 is also *, +1 also +
				at = i
			}
		}
		if at < 0 { // hasParam found it: not reached
			vals, at = []string{c.Params(name)}, 0
		}
		return paramValue(vals, at, true, string(c.RequestCtx().URI().PathOriginal()), c.Path())
	}
}

// hasParam reports whether a route's parameters (fiber.Route.Params)
// include name, exactly as CheckRoutes checks it.
func hasParam(params []string, name string) bool {
	return slices.Contains(paramNames(params), name)
}

// Locals returns a source, for WithSource, that reads values an earlier
// handler stored with c.Locals:
//
//	lockfiber.WithSource("ctx", lockfiber.Locals("user", "tenant"))
//
// lets templates use {ctx.user} and {ctx.tenant} (c.Locals("user"), ...).
// With names given, any other is a registration error; a name not set, or
// set to "" or nil, is a missing value (400). How values become text:
// docs/keys.md#values-an-earlier-middleware-stored.
func Locals(allowed ...string) keyexpr.Source[fiber.Ctx] {
	return httpcore.ContextKeys("locals", "locals key", func(c fiber.Ctx, key string) any {
		v := c.Locals(key)
		if s, ok := v.(string); ok {
			return strings.Clone(s) // fasthttp may reuse the bytes behind it
		}
		return v
	}, allowed)
}

// SourceFunc returns a source without a path, for use with WithSource:
//
//	lockfiber.WithSource("tenant", lockfiber.SourceFunc(tenantOf))
//
// lets templates use {tenant}; get runs once per request and must return
// a string that does not alias the request's buffers (copy with
// strings.Clone). A template that gives it a path ({tenant.x}) is a
// registration error.
func SourceFunc(get func(c fiber.Ctx) (string, error)) keyexpr.Source[fiber.Ctx] {
	return httpcore.SourceFunc(get)
}

// bodyKey is the c.Locals key under which a request's parsed body is
// cached, so two {body...} placeholders read and parse it once.
type bodyKey struct{}

// bodyGetter serves {body.a.b}: the JSON field at a.b (httpcore.Parsed),
// read from the body as sent (c.BodyRaw). maxBytes is read per request:
// it is set once the guards are built. The parse holds copies only
// (encoding/json allocates its strings).
func bodyGetter(path string, maxBytes *int64) getter {
	segs := httpcore.Segments(path)
	return func(c fiber.Ctx) (string, error) {
		max := *maxBytes
		pb, ok := c.Locals(bodyKey{}).(*httpcore.Parsed)
		if !ok {
			pb = httpcore.Parse(readBody(c, max))
			c.Locals(bodyKey{}, pb)
		}
		return pb.Field(segs, max)
	}
}

// readBody returns the request body as sent, at most max bytes (else
// ErrBodyTooLarge). fasthttp has read it already; the bytes alias its
// buffer and are valid until the handler returns.
func readBody(c fiber.Ctx, max int64) ([]byte, error) {
	b := c.BodyRaw()
	if int64(len(b)) > max {
		return nil, ErrBodyTooLarge
	}
	if len(b) == 0 {
		return nil, nil
	}
	return b, nil
}
