package stdhttp_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/locktag/locktag/internal/conformance"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/middleware/stdhttp"
)

// stdhttpDriver plugs net/http into the transport conformance table.
type stdhttpDriver struct{}

func (stdhttpDriver) Lock(t testing.TB, lk *locker.Locker, tag string, h conformance.Handler) conformance.Client {
	m, err := stdhttp.NewLock(lk, fmt.Sprintf(tag, "{query."+conformance.HTTPKeyParam+"}"))
	if err != nil {
		t.Fatal(err)
	}
	return conformance.ServeHTTP(t, m.WrapFunc(func(w http.ResponseWriter, r *http.Request) { conformance.WriteReply(w, r, h) }))
}

func (stdhttpDriver) Chain(t testing.TB, lk *locker.Locker, tags []string, h conformance.Handler) conformance.Client {
	var next http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { conformance.WriteReply(w, r, h) })
	for i := len(tags) - 1; i >= 0; i-- { // the first tag outermost
		m, err := stdhttp.NewLock(lk, fmt.Sprintf(tags[i], "{query."+conformance.HTTPKeyParam+"}"))
		if err != nil {
			t.Fatal(err)
		}
		next = m.Wrap(next)
	}
	return conformance.ServeHTTP(t, next)
}

func (stdhttpDriver) Idempotency(t testing.TB, lk *locker.Locker, h conformance.Handler) conformance.Client {
	m, err := stdhttp.NewIdempotency(lk, guard.WithScope(func(r *http.Request) (string, error) {
		return r.Header.Get(conformance.HTTPScopeHeader), nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	return conformance.ServeHTTP(t, m.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { conformance.WriteReply(w, r, h) })))
}

// PathRouters: ServeMux, and a router that matches URL.RawPath when it is
// set and hands the parameter over undecoded, as chi does (chi sets
// r.PathValue and r.Pattern itself).
func (stdhttpDriver) PathRouters() []conformance.PathRouter {
	route := conformance.HTTPPathPrefix + "{" + conformance.HTTPPathParam + "}"
	lock := func(t testing.TB, lk *locker.Locker, tag string, h conformance.Handler) http.Handler {
		m, err := stdhttp.NewLock(lk, fmt.Sprintf(tag, "{path."+conformance.HTTPPathParam+"}"))
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Check(route); err != nil {
			t.Fatal(err)
		}
		return m.WrapFunc(func(w http.ResponseWriter, r *http.Request) { conformance.WriteReply(w, r, h) })
	}
	return []conformance.PathRouter{
		{Name: "ServeMux", Lock: func(t testing.TB, lk *locker.Locker, tag string, h conformance.Handler) conformance.Client {
			mux := http.NewServeMux()
			mux.Handle("GET "+route, lock(t, lk, tag, h))
			return conformance.ServeHTTPPath(t, mux)
		}},
		{Name: "raw-path-router", Lock: func(t testing.TB, lk *locker.Locker, tag string, h conformance.Handler) conformance.Client {
			return conformance.ServeHTTPPath(t, rawPathRouter(route, lock(t, lk, tag, h)))
		}},
	}
}

// rawPathRouter serves next on route (/k/{id}) as chi would: it matches
// URL.RawPath when set, else URL.Path, and sets the parameter as matched
// (undecoded when it came from RawPath) and r.Pattern.
func rawPathRouter(route string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.RawPath
		if p == "" {
			p = r.URL.Path
		}
		id, ok := strings.CutPrefix(p, conformance.HTTPPathPrefix)
		if !ok || id == "" || strings.Contains(id, "/") {
			http.NotFound(w, r)
			return
		}
		r.Pattern = route
		r.SetPathValue(conformance.HTTPPathParam, id)
		next.ServeHTTP(w, r)
	})
}

func TestConformance(t *testing.T) { conformance.Run(t, stdhttpDriver{}) }
