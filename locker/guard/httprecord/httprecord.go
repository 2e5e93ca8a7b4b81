package httprecord

import (
	"encoding/binary"
	"net/http"
	"strings"

	"github.com/locktag/locktag/locker/guard"
)

// Format names the stored responses of both HTTP adapters: the record
// format given to guard.NewIdempotency and guard.EncodeRecord.
const Format = "H1"

// A stored response's payload (inside the guard's record, format "H1")
// is
//
//	uvarint(n) n × (uvarint(len) name uvarint(len) value) body
//
// A header with several values appears once per value, in order.

// EncodeResponse encodes the headers names of h, and body: the payload of
// a stored response. The adapters store the headers of their
// WithReplayHeaders list.
func EncodeResponse(h http.Header, names []string, body []byte) []byte {
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

// Request describes r to an idempotency guard as the HTTP adapters do:
// the key space is the method and route (the route pattern, or the path
// where there is none), the key comes from the header named header, and
// the fingerprints cover the method, route, path, query and body (which
// body reads, up to a cap), and Fingerprint2 the Content-Type and
// Content-Encoding too (Canonical). The name for spans, metrics and logs
// is RouteName's.
func Request(r *http.Request, route, header string, body func(max int64) ([]byte, error)) guard.Request {
	path := r.URL.EscapedPath()
	return guard.Request{
		Route: r.Method + " " + route,
		Name:  RouteName(r.Method, route),
		Keys:  r.Header.Values(header),
		Parts: []string{r.Method, route, path, r.URL.RawQuery},
		Canonical: Canonical(r.Method, route, path, r.URL.RawQuery,
			r.Header.Values("Content-Type"), r.Header.Values("Content-Encoding")),
		Body: body,
	}
}

// RouteName returns the name a guarded HTTP route goes by in spans,
// metrics, logs and lock holders on every adapter: "METHOD route", e.g.
// "POST /orders/:id/pay". A route that names its method already (a
// ServeMux pattern such as "POST /orders/{id}", which also serves HEAD
// for GET) is returned as it is; no route at all (a handler outside any
// router) is the method alone.
func RouteName(method, route string) string {
	if route == "" {
		return method
	}
	if m, _, ok := strings.Cut(route, " "); ok && m != "" && strings.Trim(m, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") == "" {
		return route
	}
	return method + " " + route
}
