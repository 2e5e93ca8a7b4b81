package lockfiber

import (
	"net/http"

	"github.com/gofiber/fiber/v3"

	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/middleware/lockfiber/internal/httpcore"
)

// refuse discards whatever the route wrote so far, sets the refusal's
// headers and hands the outcome to the error handler.
func refuse(c fiber.Ctx, s *settings, o guard.Outcome) error {
	resp := c.Response()
	resp.ResetBody()
	h := http.Header{}
	httpcore.SetRefusalHeaders(h, o)
	setHeaders(c, h)
	return s.ErrorHandler(c, o, Status(o.Kind))
}

// setHeaders copies h into c's response, replacing values of the same
// names: the shared header helpers write to an http.Header, fasthttp's
// response keeps its own.
func setHeaders(c fiber.Ctx, h http.Header) {
	rh := &c.Response().Header
	for name, vs := range h {
		rh.Del(name)
		for _, v := range vs {
			rh.Add(name, v)
		}
	}
}

// WriteProblem is the default ErrorHandler. It writes status with an RFC
// 9457 application/problem+json body whose type names the outcome
// (docs/problems.md for the list), as the other HTTP adapters
// do:
//
//	{"type":"https://github.com/locktag/locktag/blob/main/docs/problems.md#lock-busy",
//	 "title":"Resource is locked","status":409,"detail":"another request holds the lock; retry later"}
//
// The detail names at most the template placeholder concerned; it never
// contains request values, keys or anything about Redis.
func WriteProblem(c fiber.Ctx, o guard.Outcome, status int) error {
	c.Status(status)
	c.Set(fiber.HeaderContentType, ProblemContentType)
	return c.Send(httpcore.Problem(o, status))
}
