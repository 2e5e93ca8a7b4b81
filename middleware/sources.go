package middleware

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/middleware/internal/httpcore"
)

// getter is the request-time half of a source.
type getter = keyexpr.Getter[*gin.Context]

// sourceSet returns the built-in sources with the application's on top.
func (m *locks) sourceSet() keyexpr.Sources[*gin.Context] {
	return httpcore.Builtins(httpcore.Reader[*gin.Context]{
		Path:   pathGetter,
		Query:  queryGetter,
		Form:   formGetter,
		Header: func(n string) getter { return httpcore.Header(n, ginRequest) },
		Body:   func(path string) getter { return bodyGetter(path, &m.maxBody) },
		Method: func(c *gin.Context) (string, error) { return c.Request.Method, nil },
		Route:  func(c *gin.Context) (string, error) { return c.FullPath(), nil },
		IP:     func(c *gin.Context) (string, error) { return c.ClientIP(), nil },
	}, m.s.Sources)
}

// pathGetter reads a route parameter, decoded: the value every locktag
// adapter gives for the request, whatever the engine's UseRawPath,
// UnescapePathValues and RemoveExtraSlash — "x/y+z" for /k/x%2Fy+z (with
// UseRawPath; without it that path has two segments), never "x/y z" as
// UnescapePathValues has it. Gin's settings cannot be read from a
// request, so httpcore.PathParam tells from the request path and the
// route how the router read it. A route without the parameter is a
// mistake in the tag (ErrNoRouteParam, a 500), not in the request: Gin
// never matches a route with an empty :param.
func pathGetter(name string) getter {
	return func(c *gin.Context) (string, error) {
		v, ok := c.Params.Get(name)
		if !ok {
			return "", ErrNoRouteParam
		}
		return httpcore.PathParam(httpcore.GinSyntax, c.Request.URL, c.FullPath(), name, v, c.Params.ByName)
	}
}

func queryGetter(name string) getter {
	return func(c *gin.Context) (string, error) {
		v, _ := c.GetQuery(name)
		return v, nil
	}
}

// formGetter reads a url-encoded or multipart form value from the body, as
// c.PostForm does (the form is parsed and kept by net/http).
func formGetter(name string) getter {
	return func(c *gin.Context) (string, error) {
		v, _ := c.GetPostForm(name)
		return v, nil
	}
}

func ginRequest(c *gin.Context) *http.Request { return c.Request }

// GinKeys returns a source, for WithSource, that reads values an earlier
// middleware stored with c.Set:
//
//	middleware.WithSource("ctx", middleware.GinKeys("user", "tenant"))
//
// lets templates use {ctx.user} and {ctx.tenant} (c.Get("user"), ...). With
// names given, any other is a registration error; a name not set, or set to
// "" or nil, is a missing value (400). How values become text:
// docs/keys.md#values-an-earlier-middleware-stored.
func GinKeys(allowed ...string) keyexpr.Source[*gin.Context] {
	return httpcore.ContextKeys("gin key", "gin key", func(c *gin.Context, key string) any {
		v, _ := c.Get(key)
		return v
	}, allowed)
}

// SourceFunc returns a source without a path, for use with WithSource:
//
//	middleware.WithSource("tenant", middleware.SourceFunc(tenantOf))
//
// lets templates use {tenant}; get runs once per request. A template that
// gives it a path ({tenant.x}) is a registration error.
func SourceFunc(get func(c *gin.Context) (string, error)) keyexpr.Source[*gin.Context] {
	return httpcore.SourceFunc(get)
}
