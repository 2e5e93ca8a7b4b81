package httpcore

import (
	"bytes"
	"context"
	"encoding/binary"
	"log/slog"
	"net/http"

	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/locker/guard/httprecord"
)

// RecordFormat names the stored responses of both HTTP adapters (see
// EncodeResponse), so a record one of them wrote replays through the other.
const RecordFormat = httprecord.Format

// ReplayedHeader is set to "true" on every replayed response.
const ReplayedHeader = "Idempotent-Replayed"

// EncodeResponse encodes the headers names of h, and body: the payload
// of a stored response (httprecord.EncodeResponse, which owns the layout).
func EncodeResponse(h http.Header, names []string, body []byte) []byte {
	return httprecord.EncodeResponse(h, names, body)
}

// Replay writes a stored response to w, marked with ReplayedHeader; it
// reads the layout httprecord.EncodeResponse writes. An
// unreadable record writes nothing and returns guard.ErrUnreadableRecord.
func Replay(w http.ResponseWriter, r *guard.Record) error {
	b := r.Payload
	next := func() (string, bool) {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return "", false
		}
		s := string(b[k : k+int(n)])
		b = b[k+int(n):]
		return s, true
	}
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) || r.Status < 100 || r.Status > 999 {
		return guard.ErrUnreadableRecord
	}
	b = b[k:]
	pairs := make([][2]string, 0, n)
	for range n {
		name, ok1 := next()
		v, ok2 := next()
		if !ok1 || !ok2 {
			return guard.ErrUnreadableRecord
		}
		pairs = append(pairs, [2]string{name, v})
	}
	h := w.Header()
	for _, kv := range pairs {
		h.Add(kv[0], kv[1])
	}
	h.Set(ReplayedHeader, "true")
	w.WriteHeader(r.Status)
	_, _ = w.Write(b)
	return nil
}

// Capture keeps a copy of up to Max bytes of a response body and of its
// headers as they were sent, for an idempotency guard's Answer.
type Capture struct {
	Max    int
	body   bytes.Buffer
	over   bool
	header http.Header // snapshot at the first write
}

// Snapshot keeps the headers as they are when the response starts; later
// calls keep the first.
func (c *Capture) Snapshot(h http.Header) {
	if c.header == nil {
		c.header = h.Clone()
	}
}

// Keep copies written body bytes, up to Max.
func (c *Capture) Keep(p []byte) {
	if c.over {
		return
	}
	if c.body.Len()+len(p) > c.Max {
		c.over = true
		c.body = bytes.Buffer{}
		return
	}
	c.body.Write(p)
}

// Answer is the guard.Answer for a response with status, storing the
// headers names; sent says whether anything reached the client.
func (c *Capture) Answer(status int, names []string, sent bool) guard.Answer {
	return guard.Answer{
		Status:      status,
		Payload:     EncodeResponse(c.header, names, c.body.Bytes()),
		Oversize:    c.over,
		ServerError: status >= 500,
		Sent:        sent,
	}
}

// RouteName returns the name a route goes by in spans, metrics, logs and
// lock holders: "METHOD route" (httprecord.RouteName).
func RouteName(method, route string) string { return httprecord.RouteName(method, route) }

// IdemRequest describes r to an idempotency guard: the key space is the
// method and route pattern, the key comes from header, and the
// fingerprint covers the method, route, path, query and body
// (httprecord.Request).
func IdemRequest(r *http.Request, route, header string, body func(max int64) ([]byte, error)) guard.Request {
	return httprecord.Request(r, route, header, body)
}

// Recorder passes a response through, notes its status and, for an
// idempotency guard, keeps a copy (Cap): the writer the net/http and Echo
// adapters run the chain on.
type Recorder struct {
	http.ResponseWriter
	Status int      // the status written, 0 before
	Cap    *Capture // nil: not capturing
}

// WriteHeader notes the first final status (and the headers it is sent
// with) and passes it on.
func (w *Recorder) WriteHeader(code int) {
	if w.Status == 0 && code >= 200 {
		w.Status = code
		if w.Cap != nil {
			w.Cap.Snapshot(w.Header())
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write passes p on, keeping a copy when capturing; the first write sends
// 200 if no status was.
func (w *Recorder) Write(p []byte) (int, error) {
	if w.Status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	n, err := w.ResponseWriter.Write(p)
	if w.Cap != nil {
		w.Cap.Keep(p[:n])
	}
	return n, err
}

// Flush lets streaming handlers flush through the recorder.
func (w *Recorder) Flush() {
	if w.Status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap gives http.ResponseController the writer underneath.
func (w *Recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// LogAfter logs, at Warn, an error the client cannot be told of: the
// handler answered, and then the release failed, or the lock or claim was
// lost. The Gin adapter puts the same errors in c.Errors instead.
func LogAfter(ctx context.Context, l *slog.Logger, o guard.Outcome) {
	l.WarnContext(ctx, "locktag: error after the handler answered", "name", o.Name, "outcome", o.Kind.String(), "error", o.Err)
}
