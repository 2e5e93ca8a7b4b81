package stdhttp

import (
	"errors"
	"net/http"

	"github.com/locktag/locktag/locker/guard"
)

// WithPathValue sets how {path.X} reads a path parameter, for routers
// other than http.ServeMux:
//
//	stdhttp.WithPathValue(chi.URLParam)                                          // chi
//	stdhttp.WithPathValue(func(r *http.Request, k string) string { return mux.Vars(r)[k] }) // gorilla/mux
//
// With it, an empty value is a 400 and Lock.Check cannot check patterns.
// The default is (*http.Request).PathValue, which ServeMux (Go 1.22+) fills.
func WithPathValue(get func(r *http.Request, name string) string) Option {
	return guard.AdapterOption(pkgName, "WithPathValue", guard.LockGuards, func(s *settings) error {
		if get == nil {
			return errors.New("nil function")
		}
		s.PathValue = get
		return nil
	})
}

// WithRoute sets how a request's route pattern is read: the {route}
// source, the lock's name, and the idempotency key space. The default is
// r.Pattern, which ServeMux sets (chi 5.2+ too); where it is empty an
// idempotency guard uses the request path instead.
func WithRoute(route func(r *http.Request) string) Option {
	return guard.AdapterOption(pkgName, "WithRoute", guard.AllGuards, func(s *settings) error {
		if route == nil {
			return errors.New("nil function")
		}
		s.Route = route
		return nil
	})
}
