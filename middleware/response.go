package middleware

import (
	"bytes"
	"encoding/binary"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/locktag/locktag/locker/guard"
)

// A stored response's payload (inside the guard's record, format "H1")
// is
//
//	uvarint(n) n × (uvarint(len) name uvarint(len) value) body
//
// A header with several values appears once per value, in order.

func encodeResponse(h http.Header, names []string, body []byte) []byte {
	n := 0
	for _, name := range names {
		n += len(h.Values(name))
	}
	b := make([]byte, 0, 16+len(body))
	b = binary.AppendUvarint(b, uint64(n))
	for _, name := range names {
		for _, v := range h.Values(name) {
			b = binary.AppendUvarint(b, uint64(len(name)))
			b = append(b, name...)
			b = binary.AppendUvarint(b, uint64(len(v)))
			b = append(b, v...)
		}
	}
	return append(b, body...)
}

// replay writes a stored response, marked with ReplayedHeader.
func replay(c *gin.Context, r *guard.Record) error {
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
	h := c.Writer.Header()
	for _, kv := range pairs {
		h.Add(kv[0], kv[1])
	}
	h.Set(ReplayedHeader, "true")
	c.Status(r.Status)
	c.Writer.WriteHeaderNow()
	_, _ = c.Writer.Write(b)
	return nil
}

// captureWriter passes the response through and keeps a copy of up to max
// body bytes and of the headers as they were sent.
type captureWriter struct {
	gin.ResponseWriter
	max    int
	body   bytes.Buffer
	over   bool
	header http.Header // snapshot at the first write
}

func (w *captureWriter) snapshot() {
	if w.header == nil {
		w.header = w.ResponseWriter.Header().Clone()
	}
}

func (w *captureWriter) keep(p []byte) {
	if w.over {
		return
	}
	if w.body.Len()+len(p) > w.max {
		w.over = true
		w.body = bytes.Buffer{}
		return
	}
	w.body.Write(p)
}

func (w *captureWriter) Write(p []byte) (int, error) {
	w.snapshot()
	n, err := w.ResponseWriter.Write(p)
	w.keep(p[:n])
	return n, err
}

func (w *captureWriter) WriteString(s string) (int, error) {
	w.snapshot()
	n, err := w.ResponseWriter.WriteString(s)
	w.keep([]byte(s[:n]))
	return n, err
}

func (w *captureWriter) WriteHeaderNow() {
	w.snapshot()
	w.ResponseWriter.WriteHeaderNow()
}
