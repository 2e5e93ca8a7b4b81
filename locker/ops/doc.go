// Package ops is an operations page for a Locker: a mountable http.Handler
// that serves a JSON API and a small server-rendered HTML page listing the
// locks under a prefix — kind, holders (label, owner token, fencing token,
// holds, a lease countdown), waiters (how many, the longest wait, and the
// first five of the queue with their labels and waits) — and,
// when the service allows it, a force-release button that asks for a
// reason.
//
// Mount it like net/http/pprof, at a path that ends in a slash:
//
//	h, err := ops.NewHandler(lk, ops.WithAuthorizer(authz))
//	if err != nil { ... }
//	mux.Handle("/debug/locktag/", h)
//
// The handler routes on the end of the request path (api/locks,
// api/lock, api/release, assets/...; anything else ending in "/" is the
// page), and the page uses relative URLs, so it works under any mount
// point, with or without http.StripPrefix. Everything it serves is
// embedded: no external assets, no CDN, works offline.
//
// # Read-only by default
//
// Without WithAuthorizer everyone who reaches the handler may view, and
// nobody may release: the page shows no button and POST api/release
// answers 403. With an authorizer, every request asks it first (View for
// the page and the reads, Release for a force-release, with the lock's
// real name); an error matching ErrUnauthenticated answers 401, any other
// error 403. Every force-release is logged (WithLogger): who
// (WithIdentity), which lock, the reason, and the result.
//
// # Redaction
//
// Lock names can carry user data. WithRedaction replaces every name on the
// page and in the JSON (HashNames is a ready keyed hash); rows then carry
// an opaque handle, the name encrypted under a key only the server knows
// (WithHandleKey), which the release and detail calls map back to the
// name. Without redaction the handle is the name, readable.
//
// # CSRF
//
// A force-release is a POST with a JSON body and the header
// X-Locktag-Ops: 1. Browsers do not send a custom header cross-origin
// without a CORS preflight, which this handler never grants, so a form
// or a script on another site cannot release a lock with the operator's
// cookies. Requests whose Origin names another host, or whose
// Sec-Fetch-Site is cross-site, are refused too.
package ops
