package conformance

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/locker"
)

// The lock-name case: one id names one lock on every adapter, whichever
// way the request carries it — an HTTP path parameter on every router
// configuration a driver offers (PathTransport), a query value, an RPC
// request field — and that lock is the one docs/keys.md tells a user to
// take by hand: name "conf:id:" + keyexpr.Escape(id).

// HTTPPathPrefix and HTTPPathParam are the route of PathRouter.Lock:
// GET /k/{id} (in the framework's syntax: /k/:id, /k/{id}).
const (
	HTTPPathPrefix = "/k/"
	HTTPPathParam  = "id"
)

// PathTransport is implemented by the drivers of transports with path
// parameters (the HTTP adapters). RPC transports have none: there the
// case sends the id in the request field Transport.Lock reads.
type PathTransport interface {
	// PathRouters returns the router configurations to check, the
	// framework's default first.
	PathRouters() []PathRouter
}

// PathRouter is one router configuration of a PathTransport (Gin with
// UseRawPath, Fiber with UnescapePath ...).
type PathRouter struct {
	Name string
	// NoEncodedSlash: the router matches the decoded path, so an id with
	// an encoded slash (x%2Fy) is two segments and the route
	// /k/{id} is not found; the handler never runs.
	NoEncodedSlash bool
	// Lock serves h behind the adapter's lock with tag, in which %s stands
	// for {path.id}, on the route GET /k/{id}, and returns a PathClient
	// for it. Servers stop with t.
	Lock func(t testing.TB, lk *locker.Locker, tag string, h Handler) Client
}

// lockNameIDs are the ids the case sends. wire is the path segment as
// sent, "" for url.PathEscape(id).
var lockNameIDs = []struct{ name, id, wire string }{
	{"ascii", "order-42", ""},
	{"space", "a b", ""},           // a%20b
	{"encoded-slash", "x/y+z", ""}, // x%2Fy+z
	{"plus", "a+b", ""},            // a literal plus, not a space
	{"unicode", "日本", ""},          // %E6%97%A5%E6%9C%AC
	// 200 bytes, 600 once escaped: under the 256-byte cap only when the
	// cap applies to the decoded value.
	{"long-non-ascii", strings.Repeat("é", 100), ""},
	{"percent", "a%20b", ""},                     // a%2520b: decoded once, never twice
	{"lower-hex", "日本", "%e6%97%a5%e6%9c%ac"},    // a spelling Go keeps in URL.RawPath
	{"raw-with-plus", "a+b(1)", "a+b(1)"},        // RawPath again, now with a plus
	{"raw-slash-plus", "x/y+z(1)", "x%2Fy+z(1)"}, // and an encoded slash
}

// malformedWire is a path segment with a malformed escape: a bad request
// value on every adapter (net/http refuses it before any router; Fiber's
// routers accept it and locktag refuses it).
const malformedWire = "a%zzb"

const lockNameTag = `key:"conf:id:%s"`

// ManualLockName is the name docs/keys.md gives for a lock taken by hand
// that must be the lock of a route tagged key:"conf:id:{path.id}" (or
// {query.k}, {req.sku}) for id.
func ManualLockName(id string) string { return "conf:id:" + keyexpr.Escape(id) }

// lockName: for each id, the route's lock name is ManualLockName(id), and
// a lock held by hand under that name makes the route busy without
// running the handler. Through the request field every transport reads
// (Transport.Lock), then through the path parameter of each router
// configuration a PathTransport offers; there a malformed escape is an
// invalid value.
func lockName(t *testing.T, tr Transport) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	t.Run("field", func(t *testing.T) {
		var rec nameRecorder
		checkLockNames(t, lk, tr.Lock(t, lk, lockNameTag, rec.handler), &rec, false)
	})
	pt, ok := tr.(PathTransport)
	if !ok {
		t.Log("no path parameters: the id is a request field")
		return
	}
	for _, pr := range pt.PathRouters() {
		t.Run("path/"+pr.Name, func(t *testing.T) {
			var rec nameRecorder
			c := pr.Lock(t, lk, lockNameTag, rec.handler)
			checkLockNames(t, lk, c, &rec, pr.NoEncodedSlash)
			rec.reset()
			r := c(t.Context(), Request{Wire: malformedWire})
			expect(t, "malformed escape "+malformedWire, r, Invalid)
			if n := rec.count(); n != 0 {
				t.Fatalf("malformed escape: the handler ran %d times", n)
			}
		})
	}
}

func checkLockNames(t *testing.T, lk *locker.Locker, c Client, rec *nameRecorder, noEncodedSlash bool) {
	t.Helper()
	for _, id := range lockNameIDs {
		t.Run(id.name, func(t *testing.T) {
			want := ManualLockName(id.id)
			req := Request{Key: id.id, Wire: id.wire}
			rec.reset()
			r := c(t.Context(), req)
			if noEncodedSlash && strings.Contains(id.id, "/") {
				expect(t, "an encoded slash on a router that matches the decoded path", r, NotFound)
				if n := rec.count(); n != 0 {
					t.Fatalf("not found, yet the handler ran %d times", n)
				}
				return
			}
			expect(t, "free", r, OK)
			if got := rec.last(); got != want {
				t.Fatalf("lock name %q, want %q (\"conf:id:\"+keyexpr.Escape(%q))", got, want, id.id)
			}
			held, err := lk.Obtain(t.Context(), want, locker.Params{})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = held.Release(context.Background()) }()
			r = c(t.Context(), req)
			expect(t, "held by hand under "+want, r, Busy)
			if n := rec.count(); n != 1 {
				t.Fatalf("the handler ran %d times, want once (before the lock was held by hand)", n)
			}
		})
	}
}

// nameRecorder is a handler that records the name of the lock it runs
// under.
type nameRecorder struct {
	mu    sync.Mutex
	names []string
}

func (rec *nameRecorder) handler(ctx context.Context) (int64, error) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.names = append(rec.names, locker.FromContext(ctx).Key())
	return int64(len(rec.names)), nil
}

func (rec *nameRecorder) reset() {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.names = nil
}

func (rec *nameRecorder) count() int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return len(rec.names)
}

func (rec *nameRecorder) last() string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.names) == 0 {
		return ""
	}
	return rec.names[len(rec.names)-1]
}

// ServeHTTPPath starts h on an httptest server that stops with t and
// returns a PathClient for it.
func ServeHTTPPath(t testing.TB, h http.Handler) Client {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.Start()
	t.Cleanup(srv.Close)
	return PathClient(t, srv.URL)
}

// PathClient is the client of a PathRouter's route served at base: GET
// /k/{id} with Request.Wire as the id's segment, byte for byte, or
// url.PathEscape(Request.Key) when Wire is empty.
func PathClient(t testing.TB, base string) Client {
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	t.Cleanup(hc.CloseIdleConnections)
	return func(ctx context.Context, r Request) Result {
		u, err := url.Parse(base)
		if err != nil {
			return Result{Detail: err.Error()}
		}
		seg := r.Wire
		if seg == "" {
			seg = url.PathEscape(r.Key)
		}
		u.Opaque = HTTPPathPrefix + seg // sent as it is: RequestURI is Opaque
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base, nil)
		if err != nil {
			return Result{Detail: err.Error()}
		}
		req.URL = u
		resp, err := hc.Do(req)
		if err != nil {
			return Result{Detail: err.Error()}
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return Result{Detail: err.Error()}
		}
		return ClassifyHTTP(resp.StatusCode, resp.Header, b)
	}
}
