// Package lockfiber puts locktag's lock tags and idempotency guards on
// Fiber v3 routes (github.com/gofiber/fiber/v3).
//
// A route carries a lock tag (docs/tags.md): a key template, an optional
// hard lease and an optional wait. Lock turns the tag into a route-level
// fiber.Handler that, for every request, resolves the key from the
// request, obtains the lock through a locker.Locker, runs the rest of the
// route with the lock held and releases it afterwards — also when a
// handler panics:
//
//	lk, err := locker.New(redigo.New(pool)) // github.com/locktag/locktag/locker/redigo
//	if err != nil {
//		log.Fatal(err)
//	}
//	app := fiber.New()
//	if err := lockfiber.CheckRoutes(app); err != nil { // checks each route as it is added
//		log.Fatal(err)
//	}
//	app.Use(recover.New())
//	app.Post("/orders/:id/pay",
//		lockfiber.Lock(lk, `key:"order:{path.id}" expire:"30s" wait:"2s"`),
//		pay)
//
// Locks belong on routes, not in app.Use: a Use handler runs before Fiber
// knows which route the request matches, so {path.X} and {route} would
// be the Use route's. CheckRoutes reports such tags, and a {path.X} the
// route lacks, before traffic: the routes app has when it is called, and
// every later one as it is registered (docs/routes.md).
//
// Idempotency runs the rest of the route at most once per (route, caller
// scope, Idempotency-Key) and replays the stored response to retries; its
// records are the Gin and net/http adapters' (format "H1"), so a record
// stored through one replays byte-identically through another.
//
// # Fiber runs on fasthttp
//
// Three things differ from the net/http adapters, and docs/fiber.md says
// why. The handler's context is c.Context(): Lock sets it to the lease's
// context, which is cancelled with cause locker.ErrLockLost when the lock
// is lost (fiber.Ctx itself, as a context.Context, is never cancelled).
// The response is buffered until the last handler returns, so the
// adapter reads it from c.Response() to store it, and a body stream
// (c.SendStream) is written after the lock is released and is not stored.
// fasthttp reuses a request's buffers for the next request, so everything
// the adapter keeps — resolved keys, idempotency keys, stored responses —
// is a copy.
//
// Sources: {path.X} (c.Params; {path.*} for a wildcard), {query.X},
// {form.X}, {header.X}, {body.a.b} (a field of the JSON body as sent,
// size-capped), {method}, {route} (the route's registered path), {ip}
// (c.IP) and the application's (WithSource, Locals, SourceFunc). Statuses
// are in Status; they, the problem+json bodies and the options are the
// other HTTP adapters'.
package lockfiber
