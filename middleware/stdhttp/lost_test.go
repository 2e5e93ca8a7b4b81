package stdhttp_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/locktag/locktag/internal/logtest"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/middleware/stdhttp"
)

// TestLockLostWhileHandlerRuns pins the status table's row: a lost lock
// cancels the handler's context, but the handler runs on. One that
// returns without writing gets 503 lock-lost; one that writes after the
// loss anyway (it ignores its context) answers with its own 200, and the
// loss is logged.
func TestLockLostWhileHandlerRuns(t *testing.T) {
	for _, tc := range []struct {
		name   string
		write  bool
		status int
	}{
		{"returns without writing", false, http.StatusServiceUnavailable},
		{"writes after the loss", true, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lk := newLocker(t)
			logger, rec := logtest.New()
			started := make(chan struct{})
			h := stdhttp.MustLock(lk, `key:"lost:{query.k}"`, guard.WithLogger(logger)).WrapFunc(func(w http.ResponseWriter, r *http.Request) {
				close(started)
				<-r.Context().Done() // the loss
				if tc.write {
					_, _ = io.WriteString(w, "late")
				}
			})
			k := strings.ReplaceAll(t.Name(), "/", "-")
			done := make(chan *httptest.ResponseRecorder, 1)
			go func() { done <- send(h, "GET", "/?k="+k, "") }()
			testwait.Recv(t, started, "the handler to start")
			if err := lk.ForceRelease(t.Context(), "lost:"+k, "test"); err != nil {
				t.Fatal(err)
			}
			w := testwait.Recv(t, done, "the answer")
			if w.Code != tc.status {
				t.Fatalf("status %d %q, want %d", w.Code, w.Body, tc.status)
			}
			logged := rec.Matching("error after the handler answered")
			if tc.write && (w.Body.String() != "late" || len(logged) != 1 || !strings.Contains(logged[0].Attrs["error"], locker.ErrLockLost.Error())) {
				t.Fatalf("body %q; want the handler's, and the loss logged:\n%s", w.Body, rec)
			}
			if !tc.write && (!strings.Contains(w.Body.String(), "lock-lost") || len(logged) != 0) {
				t.Fatalf("body %q; want lock-lost, nothing logged after an answer:\n%s", w.Body, rec)
			}
		})
	}
}
