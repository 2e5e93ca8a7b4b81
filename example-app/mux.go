package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/ops"
	"github.com/locktag/locktag/middleware/stdhttp"
)

// stdBuyPattern is the one route served by plain net/http (a ServeMux
// with a Go 1.22 pattern) through middleware/stdhttp: the same purchase as
// the Gin route, under the same lock tag, so the two serialise.
const stdBuyPattern = "POST /std/items/{id}/buy"

// newHTTPHandler returns everything the HTTP port serves: the Gin API, the
// Shop service over connect-go (under /shop.v1.Shop/), and one net/http
// route. Tag mistakes are reported here, before traffic.
func newHTTPHandler(s *shop, accessLog io.Writer) (http.Handler, error) {
	return newHTTPHandlerOn(s, accessLog, routerGin)
}

// newHTTPHandlerOn is newHTTPHandler with the API on the router named
// (-router: gin or echo; apiRouter, echo.go).
func newHTTPHandlerOn(s *shop, accessLog io.Writer, routerName string) (http.Handler, error) {
	router, err := apiRouter(s, accessLog, routerName)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	path, ch, err := newConnectHandler(s)
	if err != nil {
		return nil, err
	}
	mux.Handle(path, ch)
	buy, err := stdhttp.NewLock(s.lk, buyTag)
	if err != nil {
		return nil, err
	}
	if err := buy.Handle(mux, stdBuyPattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context() // carries the lease; cancelled if the lock is lost
		o, err := s.Buy(ctx, r.PathValue("id"), r.Header.Get("X-User"))
		if err != nil {
			status, msg := errorStatus(err)
			http.Error(w, msg, status)
			return
		}
		w.Header().Set("X-Fencing-Token", strconv.FormatInt(locker.FromContext(ctx).Token(), 10))
		writeJSON(w, http.StatusOK, o)
	})); err != nil {
		return nil, fmt.Errorf("lock tags: %w", err)
	}
	// 200 while Redis answers, 503 + Retry-After while it does not.
	health, err := stdhttp.Health(s.lk)
	if err != nil {
		return nil, fmt.Errorf("health: %w", err)
	}
	mux.Handle("GET /healthz", health)
	// Who holds which lock, and a force-release button for loopback callers.
	opsPage, err := ops.NewHandler(s.lk, ops.WithAuthorizer(loopbackRelease))
	if err != nil {
		return nil, fmt.Errorf("ops page: %w", err)
	}
	mux.Handle(opsPath, opsPage)
	mux.Handle("/", router)
	return mux, nil
}

// opsPath is where the operations page is mounted.
const opsPath = "/debug/locktag/"

// loopbackRelease lets everyone who reaches the app view the ops page, and
// only callers on this machine (a loopback peer address) force-release a
// lock: the demo's stand-in for real authentication. It reads the TCP peer,
// not X-Forwarded-For, so it cannot be spoofed by a header; behind a
// reverse proxy on the same machine every caller is loopback, so a real
// service asks its own authentication instead.
func loopbackRelease(r *http.Request, a ops.Action, _ string) error {
	if a == ops.View {
		return nil
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		return ops.ErrForbidden
	}
	return nil
}
