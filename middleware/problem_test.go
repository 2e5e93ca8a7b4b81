package middleware_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/middleware"
)

// TestWriteProblem: every outcome has its own problem type, and the body is
// RFC 9457 JSON with type, title, status and detail.
func TestWriteProblem(t *testing.T) {
	missing := &keyexpr.TemplateError{Template: "o:{path.id}", Placeholder: "{path.id}", Pos: 2, Err: keyexpr.ErrMissingValue}
	for _, tc := range []struct {
		what   guard.Kind
		err    error
		status int
		kind   string
		detail string
	}{
		{guard.BadKey, missing, 400, "bad-lock-key", "missing value for {path.id}"},
		{guard.BadKey, &keyexpr.TemplateError{Placeholder: "{body.a}", Err: middleware.ErrBodyNotJSON}, 400, "bad-lock-key", "the request body is not valid JSON (needed for {body.a})"},
		{guard.TooLarge, &keyexpr.TemplateError{Placeholder: "{body.a}", Err: middleware.ErrBodyTooLarge}, 413, "body-too-large", ""},
		{guard.TagMistake, &keyexpr.TemplateError{Placeholder: "{path.x}", Err: middleware.ErrNoRouteParam}, 500, "lock-tag-mistake", ""},
		{guard.Busy, locker.ErrNotObtained, 409, "lock-busy", ""},
		{guard.Deadline, errors.Join(locker.ErrNotObtained, context.DeadlineExceeded), 503, "lock-wait-ended", ""},
		{guard.Unavailable, fmt.Errorf("%w: dial tcp 10.0.0.1:6379: refused", locker.ErrUnavailable), 503, "lock-unavailable", ""},
		{guard.Lost, locker.ErrLockLost, 503, "lock-lost", ""},
		{guard.Internal, errors.New("other"), 500, "", ""},
	} {
		if got := middleware.Status(tc.what); got != tc.status {
			t.Errorf("Status(%v) = %d, want %d", tc.what, got, tc.status)
		}
		rec := httptest.NewRecorder()
		c, _ := gin.CreateTestContext(rec)
		middleware.WriteProblem(c, guard.Outcome{Kind: tc.what, Err: tc.err}, tc.status)
		var p map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
			t.Fatalf("%v: body %s", tc.err, rec.Body)
		}
		wantType := "about:blank"
		if tc.kind != "" {
			wantType = "https://github.com/locktag/locktag/blob/main/docs/problems.md#" + tc.kind
		}
		if rec.Code != tc.status || rec.Header().Get("Content-Type") != "application/problem+json" ||
			p["type"] != wantType || p["status"] != float64(tc.status) || p["title"] == "" {
			t.Errorf("%v: %d %q %s", tc.err, rec.Code, rec.Header().Get("Content-Type"), rec.Body)
		}
		if tc.detail != "" && p["detail"] != tc.detail {
			t.Errorf("%v: detail %q, want %q", tc.err, p["detail"], tc.detail)
		}
	}
}

// TestErrorHandler: WithErrorHandler gets the cause and the status, after
// Retry-After is set, and the chain is aborted whatever it writes.
func TestErrorHandler(t *testing.T) {
	_, lk := setup(t)
	hold, err := lk.Obtain(t.Context(), "e:1", locker.Params{})
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Release(t.Context())
	var got guard.Outcome
	var gotStatus int
	var retry string
	ran := false
	r := gin.New()
	r.GET("/e/:id", middleware.Lock(lk, `key:"e:{path.id}"`, middleware.WithErrorHandler(func(c *gin.Context, o guard.Outcome, status int) {
		got, gotStatus, retry = o, status, c.Writer.Header().Get("Retry-After")
		c.String(http.StatusTooManyRequests, "busy")
	})), func(c *gin.Context) { ran = true })
	rec := do(r, http.MethodGet, "/e/1", "")
	if rec.Code != http.StatusTooManyRequests || ran || gotStatus != 409 || retry != "1" || got.Kind != guard.Busy || !errors.Is(got.Err, locker.ErrNotObtained) {
		t.Fatalf("%d ran=%v status=%d Retry-After=%q outcome=%+v", rec.Code, ran, gotStatus, retry, got)
	}
}
