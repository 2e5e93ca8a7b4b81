// Package lockecho5 puts locktag's declarative locks and idempotency
// guards on Echo v5 routes, with the Gin adapter's semantics, statuses
// and stored-response format. It is package lockecho (Echo v4) for Echo
// v5's handler type, func(*echo.Context) error; the two differ only where
// Echo does.
//
// A route carries a lock tag (see docs/tags.md): a key template, an
// optional hard lease and an optional wait. Lock turns the tag into an
// echo.MiddlewareFunc that, for every request, resolves the key from the
// request, obtains the lock through a locker.Locker, runs the rest of the
// chain with the lock held and releases it afterwards — also when the
// handler panics:
//
//	lk, err := locker.New(redigo.New(pool)) // github.com/locktag/locktag/locker/redigo
//	if err != nil {
//		log.Fatal(err)
//	}
//	e := echo.New()
//	e.Use(middleware.Recover()) // github.com/labstack/echo/v5/middleware
//	if err := lockecho5.CheckRoutes(e); err != nil { // first: checks each route as it is added
//		log.Fatal(err)
//	}
//	e.POST("/orders/:id/pay", pay,
//		lockecho5.Lock(lk, `key:"order:{path.id}" expire:"30s" wait:"2s"`))
//
// # Where to install it
//
// Echo finds the route before it runs the middleware of e.Use, a group
// or a route, so a Lock there reads {path.X} from the route's parameters
// (c.Param) and {route} from the route's path (c.Path(), e.g.
// "/orders/:id/pay"). Middleware of e.Pre runs before routing: a Lock
// there has no route to read — a {path.X} tag is answered 500 as a tag
// mistake — so never install one with e.Pre. Put a Lock on the route (or
// its group); install LockRules, a table of "METHOD /route" to tags, with
// e.Use; a Lock with e.Use guards every route with one tag.
//
// A tag with a rate (`key:"api:{header.X-User}" rate:"100/1m"`) is a rate
// limit on its key instead of a lock: the chain runs when the request is
// within the rate (with the RateLimit-Policy and RateLimit fields set),
// else 429 with Retry-After and the same fields. Give it to the route
// before the lock tag, so a refused request never queues for the lock.
//
// # Registration-time errors
//
// Every mistake in a tag — bad syntax, an unknown field, a bad duration, a
// key template naming a source that does not exist — is found when the
// middleware is built: Lock and LockRules panic with an error naming the
// tag, the field and the byte position; NewLock and NewLockRules return
// it. A {path.X} naming a parameter the route lacks is found by
// CheckRoutes, called right after echo.New(), as each route is added (the
// registration panics), and by LockRules (its rules) when it is built;
// otherwise it is answered 500 and logged at its first request.
// docs/routes.md has every adapter's check.
//
// # Key sources
//
// Templates read the request through sources: {path.X} (c.Param),
// {query.X}, {form.X}, {header.X}, {body.a.b} (a field of the JSON body,
// read once, size-capped and restored for the handler), {method},
// {route} (c.Path()) and {ip} (c.RealIP(): the Echo instance's
// IPExtractor, else the peer address). Applications add their own with
// WithSource, e.g. {ctx.user} from a value an authentication middleware
// stored with c.Set (see ContextKeys).
//
// # Outcomes
//
// The handler runs only when the lock is held (or, with
// guard.WithFailOpen, when Redis is unavailable and the route explicitly
// allows running unlocked). Otherwise the rest of the chain does not run
// and an RFC 9457 application/problem+json response is written (Status
// has the table): 400 for a missing or bad key value, 409 + Retry-After
// for a busy lock, 429 for a full limit or a used-up rate, 500 for a tag
// mistake (logged), 503 + Retry-After for Redis unavailable, a deadline
// while waiting, or a lock lost before anything was written.
// WithErrorHandler replaces the writer. Errors the client cannot be told
// of (a failed release after the answer) are logged through the
// guard.WithLogger logger.
//
// An error the handler returns is answered by Echo's HTTPErrorHandler
// inside the guard — while the lock is held, and before an
// idempotency guard stores the answer — and then returned to the
// middleware outside, as Echo's own middleware do; Echo's default error
// handler leaves a committed response alone.
//
// # Inside the handler
//
// The request's context is the lease's context: it carries the lease and
// is cancelled with cause locker.ErrLockLost if the lock is lost. A
// handler reads the fencing token with
//
//	lease := locker.FromContext(c.Request().Context())
//	token := lease.Token()
//
// and should pass c.Request().Context() to everything the lock protects.
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
package lockecho5
