package main

import "strings"

// adapter is one HTTP adapter: where it lives, the types it is written
// over, and the words its doc comments use where adapters differ.
type adapter struct {
	Dir     string // its directory, from the repository root
	Package string // its package name, which option errors also give
	Name    string // the adapter option errors name: "lockecho (Echo v4)"
	Import  string // the import path of its router (net/http for stdhttp)
	Ctx     string // the request type its sources read: "*gin.Context"
	// Handler is what Lock and Idempotency return; with it the adapter
	// gets guards.go, which calls the adapter's own m.handler, m.rules,
	// sourceSet, routeParams and contextOf. stdhttp, whose guards are
	// types of their own, has none.
	Handler string
	Rules   bool   // the adapter has LockRules
	Unit    string // what its constructors make: "middleware", "handler"

	// Words of the doc comments, and ErrorHandler's signature.
	Answered           string // the point after which a refusal cannot be written
	ErrorHandlerArgs   string // ErrorHandler's parameters before o ("": c Ctx)
	ErrorHandlerResult string // and its result
	ErrorHandlerNote   string // what happens to the request after it
	SourceNote         string // what else a WithSource getter must know
	ReadyMade          string // the sources it offers: "SourceFunc for a ready-made one"
	BadRuleFrom        string // what returns ErrBadRule
	NotCheckedBy       string // what returns ErrNotChecked ("": no ErrNotChecked)
	BodyNotScalar      bool   // the adapter exports ErrBodyNotScalar
	RuleRoute          string // how LockRules' errors name a rule's route: "path"

	// Echo, for the two Echo adapters, which differ only where Echo v4 and
	// v5 do, gets them the files of templates named echo_*.
	Echo *echo
}

// echo is what differs between the Echo adapters beyond their types.
type echo struct {
	Routes     string // what lists the routes, for Rules.Check: "e.Routes()"
	RoutesType string // and its type
	AddHook    string // the hook that sees each route added
	Refused    string // what becomes of a route CheckRoutes refuses, a sentence
}

// Constructors names what Option configures.
func (a adapter) Constructors() string {
	switch {
	case a.Handler == "":
		return "NewLock and NewIdempotency"
	case a.Rules:
		return "Lock, LockRules and Idempotency"
	}
	return "Lock and Idempotency"
}

// LockConstructors names the constructors of locks.
func (a adapter) LockConstructors() string {
	switch {
	case a.Handler == "":
		return "NewLock"
	case a.Rules:
		return "Lock and LockRules"
	}
	return "Lock"
}

// IdemConstructor names the constructor of idempotency guards.
func (a adapter) IdemConstructor() string {
	if a.Handler == "" {
		return "NewIdempotency"
	}
	return "Idempotency"
}

// ErrorHandlerParams is ErrorHandler's parameters before the outcome.
func (a adapter) ErrorHandlerParams() string {
	if a.ErrorHandlerArgs != "" {
		return a.ErrorHandlerArgs
	}
	return "c " + a.Ctx
}

// Core is the import path of the adapter's copy of internal/httpcore.
func (a adapter) Core() string {
	return "github.com/locktag/locktag/" + a.Dir + "/internal/httpcore"
}

// files maps the names of the adapter's generated files to their
// templates: an echo_ template makes the file named by the rest of its
// name.
func (a adapter) files() map[string]string {
	t := []string{"errors.go.tmpl", "options.go.tmpl", "status.go.tmpl"}
	if a.Handler != "" {
		t = append(t, "guards.go.tmpl")
	}
	if a.Echo != nil {
		t = append(t, "echo_middleware.go.tmpl", "echo_routecheck.go.tmpl", "echo_getters.go.tmpl")
	}
	files := make(map[string]string, len(t))
	for _, name := range t {
		files[strings.TrimSuffix(strings.TrimPrefix(name, "echo_"), ".tmpl")] = name
	}
	return files
}

// adapters are the HTTP adapters this command writes files into.
var adapters = []adapter{
	gin,
	stdHTTP,
	echoAdapter("v4", "echo.Context", echo{
		Routes:     "e.Routes()",
		RoutesType: "[]*echo.Route",
		AddHook:    "e.OnAddRouteHandler",
		Refused:    "e.Add (e.POST, g.GET, ...) panics with an error wrapping ErrBadRule.",
	}),
	echoAdapter("v5", "*echo.Context", echo{
		Routes:     "e.Router().Routes()",
		RoutesType: "echo.Routes",
		AddHook:    "e.OnAddRoute",
		Refused:    "e.AddRoute returns an error wrapping ErrBadRule, e.Add (e.POST, g.GET, ...) panics with it, and the route is not added.",
	}),
	fiber,
}

// gin is the Gin adapter, package middleware.
var gin = adapter{
	Dir:              "middleware",
	Package:          "middleware",
	Name:             "middleware (Gin)",
	Import:           "github.com/gin-gonic/gin",
	Ctx:              "*gin.Context",
	Handler:          "gin.HandlerFunc",
	Rules:            true,
	Unit:             "middleware",
	Answered:         "anything was written",
	ErrorHandlerNote: "The handler should write a response; the chain is aborted whether it does or not.",
	ReadyMade:        "GinKeys and SourceFunc for ready-made ones",
	BadRuleFrom:      "LockRules, CheckRoutes",
	NotCheckedBy:     "CheckRoutes",
	BodyNotScalar:    true,
	RuleRoute:        "pattern",
}

// stdHTTP is the net/http adapter.
var stdHTTP = adapter{
	Dir:              "middleware/stdhttp",
	Package:          "stdhttp",
	Name:             "stdhttp (net/http)",
	Import:           "net/http",
	Ctx:              "*http.Request",
	Unit:             "guard",
	Answered:         "anything was written",
	ErrorHandlerArgs: "w http.ResponseWriter, r *http.Request",
	ErrorHandlerNote: "The next handler does not run.",
	SourceNote:       `Replacing "ip", the peer's address, suits a service behind a proxy.`,
	ReadyMade:        "SourceFunc for a ready-made one",
	BadRuleFrom:      "Lock.Check, CheckRoutes",
}

// fiber is the Fiber v3 adapter.
var fiber = adapter{
	Dir:                "middleware/lockfiber",
	Package:            "lockfiber",
	Name:               "lockfiber (Fiber v3)",
	Import:             "github.com/gofiber/fiber/v3",
	Ctx:                "fiber.Ctx",
	Handler:            "fiber.Handler",
	Unit:               "handler",
	Answered:           "the handler answered",
	ErrorHandlerResult: " error",
	ErrorHandlerNote:   "The rest of the route's handlers do not run. A non-nil error goes to the app's fiber.Config.ErrorHandler, as a handler's error does.",
	SourceNote:         "The getter must return a string that outlives the request: copy anything read from the request's buffers (strings.Clone).",
	ReadyMade:          "Locals and SourceFunc for ready-made ones",
	BadRuleFrom:        "CheckRoutes",
	NotCheckedBy:       "CheckRoutes",
	BodyNotScalar:      true,
}

// echoAdapter is the adapter of Echo version v ("v4": lockecho, "v5":
// lockecho5), whose request type is ctx.
func echoAdapter(v, ctx string, e echo) adapter {
	pkg := "lockecho"
	if v != "v4" {
		pkg += v[1:]
	}
	return adapter{
		Dir:              "middleware/" + pkg,
		Package:          pkg,
		Name:             pkg + " (Echo " + v + ")",
		Import:           "github.com/labstack/echo/" + v,
		Ctx:              ctx,
		Handler:          "echo.MiddlewareFunc",
		Rules:            true,
		Unit:             "middleware",
		Answered:         "anything was written",
		ErrorHandlerNote: "The rest of the chain does not run.",
		ReadyMade:        "ContextKeys and SourceFunc for ready-made ones",
		BadRuleFrom:      "LockRules, CheckRoutes, RouteCheck.Check",
		NotCheckedBy:     "CheckRoutes or RouteCheck.Check",
		BodyNotScalar:    true,
		RuleRoute:        "path",
		Echo:             &e,
	}
}
