package lockfiber

import (
	"context"
	"strings"

	"github.com/gofiber/fiber/v3"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/locker/guard/httprecord"
	"github.com/locktag/locktag/middleware/lockfiber/internal/httpcore"
)

// Idempotency returns a route-level handler that runs the rest of the route at
// most once per (route, caller scope, Idempotency-Key) and replays the stored
// response to retries, from records any locktag HTTP adapter reads:
//
//	app.Post("/payments", lockfiber.Idempotency(lk, guard.WithScope(accountOf)), pay)
//
// accountOf is a func(fiber.Ctx) (string, error). Put it on the route, before
// Lock. A handler's error is answered by the app's ErrorHandler inside the
// guard, and that answer is stored; a body stream cannot be. It panics for an
// invalid option or no scope. Statuses: docs/idempotency.md; guide: docs/fiber.md.
func Idempotency(l *locker.Locker, opts ...Option) fiber.Handler {
	return httpcore.Must(NewIdempotency(l, opts...))
}

// handler is the fiber.Handler of one Idempotency.
func (m *idempotency) handler() fiber.Handler { return m.serve }

func (m *idempotency) serve(c fiber.Ctx) error {
	orig := c.Context()
	o := m.g.Run(orig, c, m.request(c), func(ctx context.Context) guard.Answer {
		c.SetContext(ctx)
		defer c.SetContext(orig)
		if err := c.Next(); err != nil {
			answerError(c, err)
		}
		return capture(c, m.s.ReplayHeaders, m.g.MaxResponseBytes())
	})
	switch o.Kind {
	case guard.OK:
		if o.Err != nil { // the response stands; a retry may run the handler again
			httpcore.LogAfter(contextOf(c), m.g.Logger(), o)
		}
		return nil
	case guard.Replay:
		if err := replay(c, o.Record); err != nil {
			return refuse(c, m.s, guard.Outcome{Kind: guard.Internal, Err: err, Name: o.Name, Idempotency: true})
		}
		return nil
	}
	return refuse(c, m.s, o)
}

// request describes c to the guard, in copies: the key space is the method
// and route pattern, the key comes from the key header, the fingerprint
// covers the method, route, path and query as sent, and the body
// (Fingerprint2 also the Content-Type and Content-Encoding, and the path
// in canonical form, as every HTTP adapter: httprecord.Canonical). The
// body is read by the guard during Run, which only hashes it.
func (m *idempotency) request(c fiber.Ctx) guard.Request {
	route := c.Route().Path
	method := strings.Clone(c.Method())
	uri := c.Request().URI()
	keys := peekAll(c, m.s.Header)
	path, query := string(uri.PathOriginal()), string(uri.QueryString())
	return guard.Request{
		Route: method + " " + route,
		Name:  httpcore.RouteName(method, route),
		Keys:  keys,
		Parts: []string{method, route, path, query},
		Canonical: httprecord.Canonical(method, route, path, query,
			peekAll(c, fiber.HeaderContentType), peekAll(c, fiber.HeaderContentEncoding)),
		Body: func(max int64) ([]byte, error) { return readBody(c, max) },
	}
}

// peekAll returns copies of the request's values of header name.
func peekAll(c fiber.Ctx, name string) []string {
	var out []string
	for _, v := range c.Request().Header.PeekAll(name) {
		out = append(out, string(v))
	}
	return out
}

// answerError lets the app's ErrorHandler answer a handler's error now, as
// Fiber would after the last handler, so the answer can be stored.
func answerError(c fiber.Ctx, err error) {
	if herr := c.App().ErrorHandler(c, err); herr != nil {
		_ = c.SendStatus(fiber.StatusInternalServerError)
	}
}
