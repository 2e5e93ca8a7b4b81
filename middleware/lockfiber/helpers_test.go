package lockfiber_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/middleware/recover"

	"github.com/locktag/locktag/internal/conformance"
)

// newApp returns an app with Fiber's recover middleware (a panic is a
// 500, as gin.Recovery makes it), its startup banner off.
func newApp() *fiber.App {
	app := fiber.New()
	app.Use(recover.New())
	return app
}

// serve starts app on a loopback listener, stops it with t, and returns
// its base URL. Requests go through a real fasthttp server, so its
// request and response reuse is what the tests see.
func serve(t testing.TB, app *fiber.App) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- app.Listener(ln, fiber.ListenConfig{DisableStartupMessage: true}) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = app.ShutdownWithContext(ctx)
		<-done
	})
	return "http://" + ln.Addr().String()
}

// client is conformance.ServeHTTP's client for a Fiber app served at
// base: a lock request is GET /?k=Key, an idempotency request a POST of
// Body with Idempotency-Key and X-Scope.
func client(t testing.TB, base string) conformance.Client {
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	t.Cleanup(hc.CloseIdleConnections)
	return func(ctx context.Context, r conformance.Request) conformance.Result {
		method, target, body := http.MethodGet, base+"/", io.Reader(nil)
		if !r.NoKey {
			target += "?" + url.Values{conformance.HTTPKeyParam: {r.Key}}.Encode()
		}
		if r.IdemKey != "" {
			method, body = http.MethodPost, strings.NewReader(r.Body)
		}
		req, err := http.NewRequestWithContext(ctx, method, target, body)
		if err != nil {
			return conformance.Result{Detail: err.Error()}
		}
		if r.IdemKey != "" {
			req.Header.Set("Idempotency-Key", r.IdemKey)
			req.Header.Set(conformance.HTTPScopeHeader, r.Scope)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return conformance.Result{Detail: err.Error()}
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return conformance.Result{Detail: err.Error()}
		}
		return conformance.ClassifyHTTP(resp.StatusCode, resp.Header, b)
	}
}

// reply is conformance.WriteReply for Fiber: the reply in decimal with
// 200, or nothing at all when h fails. h runs with c.Context(), the
// context a Lock hands the route.
func reply(h conformance.Handler) fiber.Handler {
	return func(c fiber.Ctx) error {
		n, err := h(c.Context())
		if err != nil {
			return nil
		}
		return c.SendString(strconv.FormatInt(n, 10))
	}
}
