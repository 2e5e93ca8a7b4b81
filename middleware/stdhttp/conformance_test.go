package stdhttp_test

import (
	"fmt"
	"net/http"
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

func TestConformance(t *testing.T) { conformance.Run(t, stdhttpDriver{}) }
