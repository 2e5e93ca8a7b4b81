package ops

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/locktag/locktag/locker"
)

// maxReasonBytes bounds a force-release's reason (the Locker keeps 200
// bytes of it; a longer one is refused rather than cut).
const maxReasonBytes = 200

// csrfHeader must be on every POST (see the package doc).
const csrfHeader = "X-Locktag-Ops"

// releaseRequest is the body of POST api/release.
type releaseRequest struct {
	Handle string `json:"handle"`
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// releaseAnswer is its answer.
type releaseAnswer struct {
	Released bool   `json:"released"`
	Name     string `json:"name"`
}

func (h *handler) release(w http.ResponseWriter, r *http.Request) {
	if msg := crossSite(r); msg != "" {
		writeError(w, http.StatusForbidden, msg)
		return
	}
	if h.o.authorize == nil {
		h.allowed(w, r, Release, "") // 403, read-only
		return
	}
	var req releaseRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, 16<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "body: want JSON {\"handle\" or \"name\", \"reason\"}: "+err.Error())
		return
	}
	name, ok := h.nameOf(w, req.Handle, req.Name)
	if !ok {
		return
	}
	reason := strings.TrimSpace(req.Reason)
	switch {
	case reason == "":
		writeError(w, http.StatusBadRequest, "missing reason: say why the lock is force-released (it is logged)")
		return
	case len(reason) > maxReasonBytes:
		writeError(w, http.StatusBadRequest, "reason too long")
		return
	}
	if !h.allowed(w, r, Release, name) {
		return
	}
	err := h.forceRelease(r, name, reason)
	h.audit(r, name, reason, err)
	if err != nil {
		writeLockerError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, releaseAnswer{Released: true, Name: h.display(name)})
}

// crossSite returns why r may come from another site, or "".
func crossSite(r *http.Request) string {
	if r.Header.Get(csrfHeader) != "1" {
		return "missing header " + csrfHeader + ": 1 (required on every POST, against cross-site requests)"
	}
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		return "cross-site request refused"
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Host != r.Host {
			return "request from another origin refused"
		}
	}
	return ""
}

// audit logs one force-release: who, which lock (as displayed), why, and
// what happened.
func (h *handler) audit(r *http.Request, name, reason string, err error) {
	lg := h.o.logger
	if lg == nil {
		lg = slog.Default()
	}
	level, result := slog.LevelWarn, "released"
	switch {
	case errors.Is(err, locker.ErrNotHeld):
		level, result = slog.LevelInfo, "not held"
	case err != nil:
		level, result = slog.LevelError, "failed"
	}
	attrs := []slog.Attr{
		slog.String("who", h.o.identity(r)),
		slog.String("lock", h.display(name)),
		slog.String("reason", reason),
		slog.String("result", result),
	}
	if err != nil {
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	// A fresh context: the record is wanted even if the client went away.
	lg.LogAttrs(context.WithoutCancel(r.Context()), level, "locktag: force-release", attrs...)
}

// forceRelease force-releases name on a fresh, bounded context (the
// operator's click should not be undone by a closed tab) that names the
// operator as the actor, for the Locker's own audit record and span.
func (h *handler) forceRelease(r *http.Request, name, reason string) error {
	ctx := locker.WithActor(context.WithoutCancel(r.Context()), h.o.identity(r))
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return h.lk.ForceRelease(ctx, name, reason)
}
