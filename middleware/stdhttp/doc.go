// Package stdhttp puts locktag's lock tags and idempotency guards on
// net/http handlers: http.ServeMux (Go 1.22+ patterns), chi, gorilla/mux —
// anything that takes an http.Handler or a func(http.Handler)
// http.Handler. Echo services use package lockecho (module
// middleware/lockecho), which reads Echo's route parameters.
//
//	lk, err := locker.New(redigo.New(pool))
//	...
//	mux := http.NewServeMux()
//	pay := stdhttp.MustLock(lk, `key:"order:{path.id}" wait:"2s"`)
//	if err := pay.Handle(mux, "POST /orders/{id}/pay", http.HandlerFunc(payOrder)); err != nil {
//		log.Fatal(err) // the tag names a wildcard the pattern lacks
//	}
//
// It is a sibling of package middleware (Gin) rather than part of it so
// that net/http services do not build gin. Both are thin layers on
// package locker/guard and share the same statuses, problem+json bodies,
// stored-response format and options (internal/httpcore); a
// response stored by one replays through the other.
//
// Lock.Handle checks a pattern as it registers the route; CheckRoutes
// checks every route of a router that can be walked (chi). A route no
// check saw answers a tag naming a wildcard its pattern lacks with 500,
// logged (docs/routes.md).
//
// Sources: {path.X} (r.PathValue, or WithPathValue for chi and gorilla),
// {query.X}, {form.X}, {header.X}, {body.a.b} (JSON, read once, capped,
// restored), {method}, {route} (r.Pattern), {ip} (the peer address) and
// the application's (WithSource). Statuses are in Status; docs/http.md is
// the guide.
//
// On the client side, NewRetryTransport is an http.RoundTripper that sends
// one Idempotency-Key per request and retries it with that key
// (docs/clients.md).
package stdhttp
