// Package middleware puts locktag's declarative locks on Gin routes.
//
// A route carries a lock tag (see docs/tags.md): a key template, an optional
// hard lease and an optional wait. Lock turns the tag into a gin.HandlerFunc
// that, for every request, resolves the key from the request, obtains the lock
// through a locker.Locker, runs the rest of the chain with the lock held and
// releases it afterwards — also when the handler panics:
//
//	lk, err := locker.New(redigo.New(pool)) // github.com/locktag/locktag/locker/redigo
//	if err != nil {
//		log.Fatal(err)
//	}
//	r := gin.New()
//	r.Use(gin.Recovery())
//	r.POST("/orders/:id/pay",
//		middleware.Lock(lk, `key:"order:{path.id}" expire:"30s" wait:"2s"`),
//		pay)
//
// LockRules does the same for a whole table of routes from one global
// middleware, keyed by "METHOD /route/pattern".
//
// A tag with a rate (`key:"api:{header.X-User}" rate:"100/1m"`) is a rate
// limit on its key instead of a lock: the chain runs when the request is
// within the rate (with the RateLimit-Policy and RateLimit fields set),
// else 429 with Retry-After and the same fields. Chain it before the
// route's lock tag, so a refused request never queues for the lock.
//
// # Registration-time errors
//
// Every mistake in a tag — bad syntax, an unknown field, a bad duration, a key
// template naming a source that does not exist — is found when the middleware
// is built: Lock and LockRules panic with an error naming the tag, the field
// and the byte position; NewLock and NewLockRules return it. A request never
// meets a bad tag.
//
// # Key sources
//
// Templates read the request through sources: {path.X}, {query.X},
// {form.X}, {header.X}, {body.a.b} (a field of the JSON body, read once,
// size-capped and restored for the handler), {method}, {route} and {ip}.
// Applications add their own with WithSource, e.g. {ctx.user} from a value an
// authentication middleware stored with c.Set (see GinKeys).
//
// # Outcomes
//
// The handler runs only when the lock is held (or, with guard.WithFailOpen, when
// Redis is unavailable and the route explicitly allows running unlocked).
// Otherwise the chain is aborted and an RFC 9457 application/problem+json
// response is written:
//
//	key value missing, empty, too long, body not JSON      400
//	JSON body over the size cap                            413
//	tag names a path parameter the route lacks             500 (logged)
//	lock busy after the tag's wait                         409 + Retry-After
//	a rate tag's rate used up                              429 + Retry-After, RateLimit
//	request deadline or cancellation while waiting         503
//	Redis unavailable or pool exhausted (fail-closed)      503
//	lock lost while the handler ran, nothing written yet   503
//
// The tag mistake is found before traffic by CheckRoutes (with RouteCheck
// as the engine's first middleware; docs/routes.md has every adapter's
// check). WithErrorHandler replaces the writer;
// Status gives the default mapping of a guard.Kind. The underlying error is also
// attached to the request with c.Error, so gin's logger shows it; response
// bodies never contain the resolved key or Redis addresses.
//
// # Inside the handler
//
// The request's context is the lease's context: it carries the lease and is
// cancelled with cause locker.ErrLockLost if the lock is lost. A handler reads
// the fencing token with
//
//	lease := locker.FromContext(c.Request.Context())
//	token := lease.Token()
//
// and should pass c.Request.Context() to everything the lock protects.
//
// # The guard layer
//
// The lock flow and the idempotency policy are package locker/guard's:
// this package reads request values, captures and replays responses, and
// maps the guard's typed outcomes to statuses. Options are Option values:
// the guard's own (guard.WithFailOpen, guard.WithScope, ...), which every
// adapter accepts, and this package's (WithSource, WithErrorHandler,
// WithKeyHeader, WithReplayHeaders), which only this one does: another
// adapter's option is refused when the middleware is built, with an error
// wrapping locker.ErrBadOption that names both adapters.
package middleware
