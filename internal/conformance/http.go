package conformance

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// HTTPKeyParam is the query parameter HTTP drivers read Request.Key from:
// their tags use {query.k}.
const HTTPKeyParam = "k"

// HTTPScopeHeader carries Request.Scope; HTTP drivers' scope functions
// read it.
const HTTPScopeHeader = "X-Scope"

// ServeHTTP starts h on an httptest server that stops with t (the
// server's panic log is discarded: panics are expected) and returns a
// client for it: a lock request is GET /?k=Key, an idempotency request a
// POST of Body with Idempotency-Key and X-Scope.
func ServeHTTP(t testing.TB, h http.Handler) Client {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.Start()
	t.Cleanup(srv.Close)
	return func(ctx context.Context, r Request) Result {
		method, target, body := http.MethodGet, srv.URL+"/", io.Reader(nil)
		if !r.NoKey {
			target += "?" + url.Values{HTTPKeyParam: {r.Key}}.Encode()
		}
		if r.IdemKey != "" {
			method, body = http.MethodPost, strings.NewReader(r.Body)
		}
		req, err := http.NewRequestWithContext(ctx, method, target, body)
		if err != nil {
			return Result{Detail: err.Error()}
		}
		if r.IdemKey != "" {
			req.Header.Set("Idempotency-Key", r.IdemKey)
			req.Header.Set(HTTPScopeHeader, r.Scope)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			return Result{Detail: err.Error()}
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return Result{Detail: err.Error()}
		}
		return ClassifyHTTP(resp.StatusCode, resp.Header, b)
	}
}

// WriteReply is how HTTP drivers answer for a Handler: the reply in
// decimal with 200, or nothing at all when h fails (so the adapter
// answers, e.g. 503 for a lost lock).
func WriteReply(w http.ResponseWriter, r *http.Request, h Handler) {
	n, err := h(r.Context())
	if err != nil {
		return
	}
	_, _ = w.Write([]byte(strconv.FormatInt(n, 10)))
}
