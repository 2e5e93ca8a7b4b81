package stdhttp_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/locker/redigo"
	"github.com/locktag/locktag/middleware/stdhttp"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A lock lost after the handler answered cannot be told to the client; it
// is logged through the guard.WithLogger logger instead of dropped.
func TestLockLostAfterAnswerIsLogged(t *testing.T) {
	srv := redistest.Start(t)
	lk, err := locker.New(redigo.New(srv.Pool(t)), locker.WithWatchdog(300*time.Millisecond, 50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk.Close() })
	var logs lockedBuffer
	m, err := stdhttp.NewLock(lk, `key:"after:{query.k}"`, guard.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	hs := httptest.NewServer(m.WrapFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
		close(started)
		select {
		case <-r.Context().Done():
		case <-time.After(testwait.Timeout):
		}
	}))
	t.Cleanup(hs.Close)
	type answer struct {
		status int
		body   string
		err    error
	}
	done := make(chan answer, 1)
	go func() {
		resp, err := hs.Client().Get(hs.URL + "/?k=x")
		if err != nil {
			done <- answer{err: err}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		done <- answer{resp.StatusCode, string(b), nil}
	}()
	testwait.Recv(t, started, "the handler to answer")
	if _, err := srv.Do("DEL", "locktag:{after:x}"); err != nil {
		t.Fatal(err)
	}
	if a := testwait.Recv(t, done, "the response"); a.err != nil || a.status != http.StatusOK || a.body != "ok" {
		t.Fatalf("got %d %q %v, want the handler's 200 ok", a.status, a.body, a.err)
	}
	if got := logs.String(); !strings.Contains(got, "error after the handler answered") || !strings.Contains(got, "lost") {
		t.Fatalf("log: %q", got)
	}
}

// A release that fails after the handler answered is logged as the
// release, with the route, and without the key's value.
func TestReleaseFailedAfterAnswerIsLogged(t *testing.T) {
	srv := redistest.Start(t)
	lk, err := locker.New(redigo.New(srv.Pool(t)), locker.WithCallTimeout(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk.Close() })
	var logs lockedBuffer
	m, err := stdhttp.NewLock(lk, `key:"pay:{path.id}"`, guard.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	if err := m.Handle(mux, "POST /orders/{id}/pay", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		srv.Stop() // Redis dies while the handler runs: the release fails
		_, _ = io.WriteString(w, "paid")
	})); err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/orders/secret-77/pay", nil))
	if w.Code != http.StatusOK || w.Body.String() != "paid" {
		t.Fatalf("got %d %q, want the handler's 200", w.Code, w.Body.String())
	}
	got := logs.String()
	if !strings.Contains(got, "guard: release failed: lock POST /orders/{id}/pay: locker: redis unavailable") || strings.Contains(got, "secret-77") {
		t.Fatalf("log %q: want the release failure with the route, without the key", got)
	}
}
