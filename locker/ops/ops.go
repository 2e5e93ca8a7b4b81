package ops

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/locktag/locktag/locker"
)

// handler is what NewHandler returns.
type handler struct {
	lk      *locker.Locker
	o       options
	handles *handles
}

// NewHandler returns the operations page and its JSON API for lk, to be
// mounted at a path ending in "/" (e.g. "/debug/locktag/"): the HTML page,
// GET api/locks, GET api/lock, POST api/release (a force-release, which
// needs WithAuthorizer) and the page's assets. Errors are JSON,
// {"error": "..."}, with the statuses listed in docs/operations.md. The
// error wraps locker.ErrBadOption, naming each invalid option; NewHandler never
// touches Redis. It panics if lk is nil.
func NewHandler(lk *locker.Locker, opts ...Option) (http.Handler, error) {
	if lk == nil {
		panic("ops: NewHandler with a nil Locker")
	}
	o, err := evaluateOptions(opts)
	if err != nil {
		return nil, err
	}
	hs, err := newHandles(o.redact != nil, o.handleKey)
	if err != nil {
		panic("ops: " + err.Error()) // crypto/rand or AES failed: nothing can work
	}
	return &handler{lk: lk, o: o, handles: hs}, nil
}

// The routes, matched on the end of the path; any other path ending in
// "/" is the page.
const (
	routeList    = "/api/locks"
	routeLock    = "/api/lock"
	routeRelease = "/api/release"
	routeCSS     = "/assets/ops.css"
	routeJS      = "/assets/ops.js"
	routePage    = "/"
)

// routeOf returns the route path ends with, or "".
func routeOf(path string) string {
	for _, r := range []string{routeList, routeLock, routeRelease, routeCSS, routeJS, routePage} {
		if strings.HasSuffix(path, r) {
			return r
		}
	}
	return ""
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	route := routeOf(r.URL.Path)
	switch {
	case route == "":
		writeError(w, http.StatusNotFound, "no such page")
		return
	case route == routeRelease:
		if method(w, r, http.MethodPost) {
			h.release(w, r)
		}
		return
	case !method(w, r, http.MethodGet, http.MethodHead):
		return
	}
	switch route {
	case routeCSS:
		serveAsset(w, "ops.css", "text/css; charset=utf-8")
	case routeJS:
		serveAsset(w, "ops.js", "text/javascript; charset=utf-8")
	case routeList:
		if h.allowed(w, r, View, "") {
			h.list(w, r)
		}
	case routeLock:
		h.lock(w, r) // asks for View with the lock's name
	case routePage:
		if h.allowed(w, r, View, "") {
			h.servePage(w, r)
		}
	}
}

// method answers 405 unless r's method is one of ms.
func method(w http.ResponseWriter, r *http.Request, ms ...string) bool {
	for _, m := range ms {
		if r.Method == m {
			return true
		}
	}
	w.Header().Set("Allow", strings.Join(ms, ", "))
	writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed; use "+strings.Join(ms, " or "))
	return false
}

// authorize asks the authorizer; without one, View is allowed and Release
// refused.
func (h *handler) authorize(r *http.Request, a Action, name string) error {
	if h.o.authorize == nil {
		if a == View {
			return nil
		}
		return ErrForbidden
	}
	return h.o.authorize(r, a, name)
}

// allowed answers 401 or 403 unless the authorizer allows a on name.
func (h *handler) allowed(w http.ResponseWriter, r *http.Request, a Action, name string) bool {
	err := h.authorize(r, a, name)
	switch {
	case err == nil:
		return true
	case errors.Is(err, ErrUnauthenticated):
		writeError(w, http.StatusUnauthorized, "not authenticated")
	case h.o.authorize == nil:
		writeError(w, http.StatusForbidden, "read-only: this handler has no authorizer, so nothing can be released here")
	default:
		writeError(w, http.StatusForbidden, "forbidden: "+a.String())
	}
	return false
}

func (h *handler) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p, err := h.page(r.Context(), q.Get("prefix"), q.Get("cursor"), 0)
	if err != nil {
		writeLockerError(w, err)
		return
	}
	h.markReleasable(r, p)
	writeJSON(w, http.StatusOK, p)
}

// markReleasable asks the authorizer, once per row, whether the caller may
// release it.
func (h *handler) markReleasable(r *http.Request, p *Page) {
	if h.o.authorize == nil {
		return
	}
	for i := range p.Locks {
		name, err := h.handles.name(p.Locks[i].Handle)
		p.Locks[i].CanRelease = err == nil && h.authorize(r, Release, name) == nil
		p.CanRelease = p.CanRelease || p.Locks[i].CanRelease
	}
}

// nameOf reads the lock named by ?handle= or ?name= (or the body's
// fields), answering 400 itself when neither is usable.
func (h *handler) nameOf(w http.ResponseWriter, handle, name string) (string, bool) {
	switch {
	case handle != "" && name != "":
		writeError(w, http.StatusBadRequest, "give a handle or a name, not both")
	case handle != "":
		n, err := h.handles.name(handle)
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return "", false
		}
		return n, true
	case name == "":
		writeError(w, http.StatusBadRequest, "missing lock: give handle or name")
	case len(name) > maxNameBytes:
		writeError(w, http.StatusBadRequest, "lock name too long")
	default:
		return name, true
	}
	return "", false
}

func (h *handler) lock(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	name, ok := h.nameOf(w, q.Get("handle"), q.Get("name"))
	if !ok || !h.allowed(w, r, View, name) {
		return
	}
	l, err := h.detail(r.Context(), name)
	if err != nil {
		writeLockerError(w, err)
		return
	}
	l.CanRelease = h.o.authorize != nil && h.authorize(r, Release, name) == nil
	writeJSON(w, http.StatusOK, l)
}

// writeLockerError answers a Locker error with lockerStatus's status.
func writeLockerError(w http.ResponseWriter, err error) {
	status, msg := lockerStatus(err)
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "5")
	}
	writeError(w, status, msg)
}

// lockerStatus maps a Locker error to a status and a message that names
// no Redis host.
func lockerStatus(err error) (int, string) {
	switch {
	case errors.Is(err, errNotFound):
		return http.StatusNotFound, errNotFound.Error()
	case errors.Is(err, errPrefixTooLong):
		return http.StatusBadRequest, "prefix too long"
	case errors.Is(err, locker.ErrNotHeld):
		return http.StatusConflict, "not held: the lock was released (or expired) before the force-release; nothing was changed"
	case errors.Is(err, locker.ErrBadOption):
		return http.StatusBadRequest, "bad cursor: pass the next cursor a listing returned"
	case errors.Is(err, locker.ErrEmptyKey):
		return http.StatusBadRequest, "empty lock name"
	case errors.Is(err, errors.ErrUnsupported):
		return http.StatusNotImplemented, "not supported by this Locker"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, "request ended before Redis answered"
	}
	return http.StatusServiceUnavailable, "redis unavailable" // ErrUnavailable and anything else Redis-side
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
