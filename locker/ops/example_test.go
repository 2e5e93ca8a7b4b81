package ops_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/ops"
	"github.com/locktag/locktag/locker/redigo"
)

// ExampleNewHandler mounts the page read-only, as a service would beside
// net/http/pprof, and lists the held locks as JSON.
func ExampleNewHandler() {
	lk, err := locker.New(redigo.New(exampleRedis.NewPool()))
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()
	ctx := context.Background()
	le, err := lk.Obtain(ctx, "invoice:17", locker.Params{})
	if err != nil {
		log.Fatal(err)
	}
	defer le.Release(ctx)

	h, err := ops.NewHandler(lk) // read-only: no authorizer
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/debug/locktag/", h)

	w := httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest("GET", "/debug/locktag/api/locks?prefix=invoice:", nil))
	var p ops.Page
	if err := jsonDecode(w.Body.String(), &p); err != nil {
		log.Fatal(err)
	}
	fmt.Println(w.Code, len(p.Locks), p.Locks[0].Name, p.Locks[0].Holders[0].Fence == le.Token(), p.CanRelease)

	// Releasing needs an authorizer.
	w = httptest.NewRecorder()
	r := httptest.NewRequest("POST", "/debug/locktag/api/release", strings.NewReader(`{"name":"invoice:17","reason":"stuck"}`))
	r.Header.Set("X-Locktag-Ops", "1")
	mux.ServeHTTP(w, r)
	fmt.Print(w.Code, " ", w.Body)
	// Output:
	// 200 1 invoice:17 true false
	// 403 {"error":"read-only: this handler has no authorizer, so nothing can be released here"}
}

// ExampleWithAuthorizer allows force-release from loopback only, and logs
// every one.
func ExampleWithAuthorizer() {
	lk, err := locker.New(redigo.New(exampleRedis.NewPool()), locker.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()
	ctx := context.Background()
	le, err := lk.Obtain(ctx, "export:daily", locker.Params{})
	if err != nil {
		log.Fatal(err)
	}
	work := le.Context() // the job's context, cancelled if the lock is lost

	loopbackOnly := func(r *http.Request, a ops.Action, name string) error {
		if a == ops.View {
			return nil
		}
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			return ops.ErrForbidden
		}
		return nil
	}
	audit := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{} // a stable output for the example
			}
			return a
		},
	}))
	h, err := ops.NewHandler(lk, ops.WithAuthorizer(loopbackOnly), ops.WithLogger(audit),
		ops.WithIdentity(func(r *http.Request) string { return "oncall" }))
	if err != nil {
		log.Fatal(err)
	}

	for _, from := range []string{"192.0.2.7:4000", "127.0.0.1:4000"} {
		r := httptest.NewRequest("POST", "/debug/locktag/api/release", strings.NewReader(`{"name":"export:daily","reason":"hung on NFS"}`))
		r.RemoteAddr = from
		r.Header.Set("X-Locktag-Ops", "1")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Print(from, " ", w.Code, " ", w.Body)
	}
	<-work.Done()
	fmt.Println(context.Cause(work))
	// Output:
	// 192.0.2.7:4000 403 {"error":"forbidden: release"}
	// level=WARN msg="locktag: force-release" who=oncall lock=export:daily reason="hung on NFS" result=released
	// 127.0.0.1:4000 200 {"released":true,"name":"export:daily"}
	// locker: lock lost: force-released: hung on NFS
}

// ExampleHashNames redacts names: the first segment stays, the rest is a
// keyed hash.
func ExampleHashNames() {
	redact := ops.HashNames([]byte("a secret from your config"))
	fmt.Println(strings.HasPrefix(redact("user:alice@example.com"), "user:#"))
	name := "user:alice@example.com"
	first, again := redact(name), redact(name)
	fmt.Println(first == again) // the same name, the same redaction
	fmt.Println(len(redact("nocolon")))
	// Output:
	// true
	// true
	// 17
}
