package lockfiber_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v3"

	"github.com/locktag/locktag/internal/lockertest"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/middleware/lockfiber"
	"github.com/locktag/locktag/middleware/lockfiber/internal/httpcore"
)

// netHTTPIdempotency is the net/http adapters' idempotency flow as
// internal/httpcore gives it to them (capture, record format "H1",
// replay), for a route pattern route.
func netHTTPIdempotency(t *testing.T, lk *locker.Locker, route string, next http.HandlerFunc) http.Handler {
	g, err := guard.NewIdempotency[*http.Request](lk, httpcore.RecordFormat, guard.WithPublicScope())
	if err != nil {
		t.Fatal(err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := httpcore.IdemRequest(r, route, httpcore.DefaultIdempotencyHeader, func(max int64) ([]byte, error) { return httpcore.ReadBody(r, max) })
		o := g.Run(r.Context(), r, q, func(ctx context.Context) guard.Answer {
			rec := httptest.NewRecorder()
			next(rec, r.WithContext(ctx))
			cp := &httpcore.Capture{Max: g.MaxResponseBytes()}
			cp.Snapshot(rec.Header())
			cp.Keep(rec.Body.Bytes())
			for k, vs := range rec.Header() {
				w.Header()[k] = vs
			}
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
			return cp.Answer(rec.Code, httpcore.DefaultReplayHeaders(), true)
		})
		switch o.Kind {
		case guard.OK:
		case guard.Replay:
			if err := httpcore.Replay(w, o.Record); err != nil {
				t.Error(err)
			}
		default:
			t.Errorf("net/http side: %v %v", o.Kind, o.Err)
			w.WriteHeader(httpcore.Status(o.Kind))
		}
	})
}

type answer struct {
	status                    int
	contentType, etag, marker string
	body                      string
}

func send(t *testing.T, url, key string) answer {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(`{"amount":5}`))
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("ETag"), resp.Header.Get(lockfiber.ReplayedHeader), string(b)}
}

// A record stored through the net/http adapters' flow replays through
// Fiber, and one stored through Fiber replays through theirs, with the
// same status, allow-listed headers and body bytes.
func TestRecordsReplayAcrossAdapters(t *testing.T) {
	lk := lockertest.NewLocker(t, redistest.Start(t))
	const body = "{\"paid\":5}\n\x00\xffbytes"
	app := newApp()
	app.Post("/pay", lockfiber.Idempotency(lk, guard.WithPublicScope()), func(c fiber.Ctx) error {
		c.Set("ETag", `"v1"`)
		c.Set("Content-Type", "application/json")
		return c.Status(fiber.StatusCreated).SendString(body)
	})
	fiberURL := serve(t, app) + "/pay"
	std := httptest.NewServer(netHTTPIdempotency(t, lk, "/pay", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"v1"`)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(std.Close)
	stdURL := std.URL + "/pay"

	want := answer{http.StatusCreated, "application/json", `"v1"`, "", body}
	for _, c := range []struct{ name, first, then string }{
		{"net/http then Fiber", stdURL, fiberURL},
		{"Fiber then net/http", fiberURL, stdURL},
	} {
		key := "k-" + strings.ReplaceAll(c.name, " ", "-")
		if got := send(t, c.first, key); got != want {
			t.Errorf("%s: first %+v, want %+v", c.name, got, want)
		}
		replayed := want
		replayed.marker = "true"
		if got := send(t, c.then, key); got != replayed {
			t.Errorf("%s: replay %+v, want %+v", c.name, got, replayed)
		}
	}
}
