package stdhttp_test

import (
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/logtest"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/locker/redigo"
	"github.com/locktag/locktag/middleware/stdhttp"
)

// TestUnavailableLoggedOnce: the first 503 of a Redis outage writes one
// log record naming the route; a second 503 in the same outage writes
// none. net/http has no error channel, so without it the outage would be
// silent in the service's log.
func TestUnavailableLoggedOnce(t *testing.T) {
	srv := redistest.Start(t)
	lk, err := locker.New(redigo.New(srv.Pool(t)), locker.WithCallTimeout(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk.Close() })
	logger, rec := logtest.New()
	mux := http.NewServeMux()
	pay := stdhttp.MustLock(lk, `key:"order:{path.id}"`, guard.WithLogger(logger))
	if err := pay.Handle(mux, "POST /orders/{id}/pay", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "paid")
	})); err != nil {
		t.Fatal(err)
	}
	if w := send(mux, "POST", "/orders/1/pay", ""); w.Code != http.StatusOK || len(rec.Records()) != 0 {
		t.Fatalf("healthy: %d, records:\n%s", w.Code, rec)
	}
	srv.Stop()
	if w := send(mux, "POST", "/orders/1/pay", ""); w.Code != http.StatusServiceUnavailable {
		t.Fatalf("first refusal: %d %q", w.Code, w.Body)
	}
	recs := rec.Records()
	if len(recs) != 1 || recs[0].Level.String() != "ERROR" || recs[0].Attrs["name"] != "POST /orders/{id}/pay" || recs[0].Attrs["outcome"] != "unavailable" {
		t.Fatalf("want one record naming the route after the first 503, got:\n%s", rec)
	}
	if w := send(mux, "POST", "/orders/2/pay", ""); w.Code != http.StatusServiceUnavailable {
		t.Fatalf("second refusal: %d %q", w.Code, w.Body)
	}
	if n := len(rec.Records()); n != 1 {
		t.Fatalf("the second 503 of the outage logged again (%d records):\n%s", n, rec)
	}
}

// TestFailOpenLoggedOnce: a fail-open route runs its handler without the
// lock while Redis is down and says so once per outage, not per request.
func TestFailOpenLoggedOnce(t *testing.T) {
	srv := redistest.Start(t)
	lk, err := locker.New(redigo.New(srv.Pool(t)), locker.WithCallTimeout(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk.Close() })
	srv.Stop()
	logger, rec := logtest.New()
	h := stdhttp.MustLock(lk, `key:"f:{query.id}"`, guard.WithLogger(logger), guard.WithFailOpen()).
		WrapFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ran") })
	for i := range 2 {
		if w := send(h, "GET", "/?id=1", ""); w.Code != http.StatusOK {
			t.Fatalf("request %d: %d", i, w.Code)
		}
	}
	if recs := rec.Records(); len(recs) != 1 || recs[0].Attrs["outcome"] != "failed open" {
		t.Fatalf("want one record for two fail-open requests, got:\n%s", rec)
	}
}

// TestTagMistakeLoggedOncePerRoute: a lock wrapped onto a ServeMux route
// whose pattern lacks the tag's {path.X} answers 500 (never 400) to every
// request, and logs it once per route.
func TestTagMistakeLoggedOncePerRoute(t *testing.T) {
	lk := newLocker(t)
	logger, rec := logtest.New()
	lock := stdhttp.MustLock(lk, `key:"order:{path.orderId}"`, guard.WithLogger(logger))
	mux := http.NewServeMux()
	mux.Handle("POST /orders/{id}/pay", lock.WrapFunc(func(http.ResponseWriter, *http.Request) { t.Error("handler ran") }))
	mux.Handle("POST /orders/{id}/ship", lock.WrapFunc(func(http.ResponseWriter, *http.Request) { t.Error("handler ran") }))
	for _, target := range []string{"/orders/1/pay", "/orders/2/pay", "/orders/1/ship", "/orders/3/pay"} {
		if w := send(mux, "POST", target, ""); w.Code != http.StatusInternalServerError {
			t.Fatalf("%s: %d %q", target, w.Code, w.Body)
		}
	}
	recs := rec.Records()
	if len(recs) != 2 || recs[0].Attrs["route"] != "POST /orders/{id}/pay" || recs[1].Attrs["route"] != "POST /orders/{id}/ship" {
		t.Fatalf("want one record per route, got:\n%s", rec)
	}
}

// TestHungRedisRefusedAfterOneCallTimeout: with a Redis that accepts
// connections but answers nothing (frozen with SIGSTOP), a locked or
// idempotent request answers 503 after one call timeout (the default 2s),
// whatever the tag's wait. Before, the clean-up of the unanswered acquire
// ran on the request's path with a call timeout of its own, so every such
// refusal took two (4s). The bound is generous: 3.5s against a floor of
// 4s for the old behaviour.
func TestHungRedisRefusedAfterOneCallTimeout(t *testing.T) {
	srv := redistest.Start(t)
	// One Locker per handler, so that the three refusals run at once
	// without sharing a connection; the default call timeout, 2s.
	lk := func() *locker.Locker {
		lk, err := locker.New(redigo.New(srv.Pool(t)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = lk.Close() })
		return lk
	}
	quiet := guard.WithLogger(slog.New(slog.DiscardHandler))
	ok := func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") }
	handlers := map[string]http.Handler{
		`wait:"0"`:    stdhttp.MustLock(lk(), `key:"h:{query.id}" wait:"0"`, quiet).WrapFunc(ok),
		`wait:"5s"`:   stdhttp.MustLock(lk(), `key:"h5:{query.id}" wait:"5s"`, quiet).WrapFunc(ok),
		"idempotency": stdhttp.MustIdempotency(lk(), guard.WithPublicScope(), quiet).Wrap(http.HandlerFunc(ok)),
	}
	for name, h := range handlers { // healthy: scripts loaded, connections up
		if w := send(h, "POST", "/?id=warm-"+name, "", "Idempotency-Key", `"warm"`); w.Code != http.StatusOK {
			t.Fatalf("%s before the freeze: %d %q", name, w.Code, w.Body)
		}
	}
	srv.Freeze()
	t.Cleanup(srv.Thaw) // before Close's SIGKILL either way; a frozen server still dies
	type result struct {
		name    string
		code    int
		elapsed time.Duration
	}
	results := make(chan result, len(handlers))
	for name, h := range handlers {
		go func() {
			start := time.Now()
			w := send(h, "POST", "/?id=1", "", "Idempotency-Key", `"k1"`)
			results <- result{name, w.Code, time.Since(start)}
		}()
	}
	for range handlers {
		r := testwait.Recv(t, results, "a refusal")
		if r.code != http.StatusServiceUnavailable || r.elapsed >= 3500*time.Millisecond {
			t.Errorf("%s: %d after %v, want 503 after one call timeout (2s), well before two (4s)", r.name, r.code, r.elapsed.Round(time.Millisecond))
		}
	}
	srv.Thaw()
	testwait.Eventually(t, "a request to get a lock once Redis answers again", func() bool {
		return send(handlers[`wait:"0"`], "POST", "/?id=after", "").Code == http.StatusOK
	})
}
