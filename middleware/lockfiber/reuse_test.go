package lockfiber_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/gofiber/fiber/v3"

	"github.com/locktag/locktag/internal/lockertest"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/middleware/lockfiber"
)

// fasthttp reuses a connection's request and response buffers for the
// next request. Many sequential requests on one connection, each with its
// own path value, header, body and idempotency key, must leave every
// resolved lock key and every stored response intact: nothing the adapter
// keeps may alias a buffer. The keys are read after all requests are
// done; the stored responses are replayed after all requests are done.
func TestNoBufferKeptAfterHandler(t *testing.T) {
	const n = 150
	lk := lockertest.NewLocker(t, redistest.Start(t))
	var mu sync.Mutex
	keys := make(map[string]string)    // path id -> the lease's key, as the handler saw it
	aliased := make(map[string]string) // path id -> the id as fasthttp handed it out
	app := newApp()
	app.Post("/r/:id",
		lockfiber.Idempotency(lk, guard.WithScope(func(c fiber.Ctx) (string, error) { return c.Get("X-Scope"), nil })),
		lockfiber.Lock(lk, `key:"r:{path.id}:{header.X-B}:{body.v}" keep:"1m"`),
		func(c fiber.Ctx) error {
			le := locker.FromContext(c.Context())
			mu.Lock()
			id := strings.Clone(c.Params("id")) // c.Params aliases the request's buffer
			keys[id] = le.Key()
			aliased[id] = c.Params("id") // the control: kept without a copy
			mu.Unlock()
			c.Set("Location", "/r/"+c.Params("id"))
			return c.Status(fiber.StatusCreated).Send(c.Body()) // the body as sent, through fasthttp's buffer
		})
	base := serve(t, app)
	hc := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}} // one connection: one set of buffers
	t.Cleanup(hc.CloseIdleConnections)

	type sent struct{ id, b, v, idem string }
	reqs := make([]sent, n)
	for i := range reqs {
		// Values of varied lengths, so a later request overwrites part of an
		// earlier one's bytes in a reused buffer.
		reqs[i] = sent{
			id:   fmt.Sprint(i),
			b:    "b" + strings.Repeat("x", (i*7)%23),
			v:    "v" + strings.Repeat(string(rune('a'+i%26)), (i*5)%31),
			idem: "idem-" + fmt.Sprint(i*31),
		}
	}
	do := func(s sent, idem string) (int, http.Header, string) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/r/"+s.id, strings.NewReader(`{"v":"`+s.v+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-B", s.b)
		req.Header.Set("X-Scope", "tenant")
		req.Header.Set("Idempotency-Key", idem)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(b)
	}
	for _, s := range reqs {
		if status, _, body := do(s, s.idem); status != fiber.StatusCreated {
			t.Fatalf("request %s: %d %s", s.id, status, body)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	changed := 0
	for _, s := range reqs {
		if aliased[s.id] != s.id {
			changed++
		}
	}
	if changed == 0 {
		t.Fatal("control: no path value kept without a copy changed; the test cannot see aliasing")
	}
	for _, s := range reqs {
		if want := "r:" + s.id + ":" + s.b + ":" + s.v; keys[s.id] != want {
			t.Errorf("request %s: the lease's key is now %q, want %q", s.id, keys[s.id], want)
		}
	}
	for _, s := range reqs {
		status, h, body := do(s, s.idem)
		want := `{"v":"` + s.v + `"}`
		if status != fiber.StatusCreated || h.Get(lockfiber.ReplayedHeader) != "true" || body != want || h.Get("Location") != "/r/"+s.id {
			t.Errorf("replay of %s: %d %q Location %q replayed %q, want 201 %q Location /r/%s replayed",
				s.id, status, body, h.Get("Location"), h.Get(lockfiber.ReplayedHeader), want, s.id)
		}
	}
	// The kept locks are on exactly the keys the requests named: a new
	// request (another idempotency key) for each is busy.
	for _, s := range reqs[:20] {
		if status, _, body := do(s, s.idem+"-new"); status != fiber.StatusConflict {
			t.Errorf("request %s again: %d %s, want 409 (its lock is kept)", s.id, status, body)
		}
	}
}
