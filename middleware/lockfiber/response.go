package lockfiber

import (
	"net/http"

	"github.com/gofiber/fiber/v3"

	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/middleware/lockfiber/internal/httpcore"
)

// fasthttp buffers the whole response and sends it after the last handler
// returns, so the adapter reads what the route answered from c.Response()
// instead of wrapping a writer. Nothing has reached the client while a
// guard runs.

// written reports whether the route answered: a status other than the
// default 200, a body, or a body stream. An empty 200 is fasthttp's
// default and counts as no answer (a lost lock is then answered 503).
func written(c fiber.Ctx) bool {
	resp := c.Response()
	return resp.StatusCode() != fiber.StatusOK || len(resp.Body()) > 0 || resp.IsBodyStream()
}

// capture copies the route's response for the idempotency guard: the
// headers names and up to max bytes of the body, all copied out of
// fasthttp's buffers (httpcore.EncodeResponse builds a new slice), so the
// stored record references nothing the next request on the connection
// reuses. A body stream (c.SendStream, c.SendStreamWriter) is produced
// after the handler returns and cannot be copied here: it is reported as
// oversize, and guard.WithOversizePolicy decides.
func capture(c fiber.Ctx, names []string, max int) guard.Answer {
	resp := c.Response()
	h := http.Header{}
	for _, name := range names {
		for _, v := range resp.Header.PeekAll(name) {
			h.Add(name, string(v))
		}
	}
	cp := &httpcore.Capture{Max: max}
	cp.Snapshot(h)
	stream := resp.IsBodyStream()
	if !stream {
		cp.Keep(resp.Body()) // resp.Body would read a stream to its end
	}
	a := cp.Answer(resp.StatusCode(), names, written(c))
	a.Oversize = a.Oversize || stream
	return a
}

// replay writes a stored response into c's response through
// httpcore.Replay, so a record written by any HTTP adapter replays
// byte-identically.
func replay(c fiber.Ctx, r *guard.Record) error {
	c.Response().ResetBody()
	return httpcore.Replay(&replayWriter{c: c, h: http.Header{}}, r)
}

// replayWriter is the http.ResponseWriter httpcore.Replay writes to: it
// moves headers and status into fasthttp's response at WriteHeader.
type replayWriter struct {
	c fiber.Ctx
	h http.Header
}

func (w *replayWriter) Header() http.Header { return w.h }

func (w *replayWriter) WriteHeader(status int) {
	setHeaders(w.c, w.h)
	w.c.Status(status)
}

func (w *replayWriter) Write(p []byte) (int, error) {
	w.c.Response().AppendBody(p)
	return len(p), nil
}
