package middleware

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/middleware/internal/httpcore"
)

// getter is the request-time half of a source.
type getter = keyexpr.Getter[*gin.Context]

// sourceSet returns the built-in sources with the application's on top.
func (m *locks) sourceSet() keyexpr.Sources[*gin.Context] {
	s := keyexpr.Sources[*gin.Context]{
		"path":   httpcore.Named("path", pathGetter),
		"query":  httpcore.Named("query", queryGetter),
		"form":   httpcore.Named("form", formGetter),
		"header": httpcore.Named("header", func(n string) getter { return httpcore.Header(n, ginRequest) }),
		"body":   httpcore.Named("body", func(path string) getter { return bodyGetter(path, &m.maxBody) }),
		"method": httpcore.Bare("method", func(c *gin.Context) (string, error) { return c.Request.Method, nil }),
		"route":  httpcore.Bare("route", func(c *gin.Context) (string, error) { return c.FullPath(), nil }),
		"ip":     httpcore.Bare("ip", func(c *gin.Context) (string, error) { return c.ClientIP(), nil }),
	}
	for name, src := range m.s.Sources {
		s[name] = src
	}
	return s
}

// pathGetter reads a route parameter. A route without the parameter is a
// mistake in the tag (ErrNoRouteParam, a 500), not in the request: Gin
// never matches a route with an empty :param.
func pathGetter(name string) getter {
	return func(c *gin.Context) (string, error) {
		for _, p := range c.Params {
			if p.Key == name {
				return p.Value, nil
			}
		}
		return "", ErrNoRouteParam
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

// GinKeys returns a source that reads values an earlier middleware stored
// with c.Set, for use with WithSource:
//
//	middleware.WithSource("ctx", middleware.GinKeys("user", "tenant"))
//
// lets templates use {ctx.user} and {ctx.tenant}, read with c.Get("user")
// and c.Get("tenant"). With allowed keys given, any other key in a template is
// a registration error (so a typo cannot become a 400 at request time); with
// none, every key is accepted. A key that is not set, or set to "" or nil,
// is a missing value (400). Strings and []byte are used as they are, integers
// and booleans in decimal / "true" / "false", fmt.Stringer values through
// String, and anything else through fmt.Sprint.
func GinKeys(allowed ...string) keyexpr.Source[*gin.Context] {
	allowed = slices.Clone(allowed)
	return func(path string) (getter, error) {
		if path == "" {
			return nil, fmt.Errorf("a gin key source needs a key name, e.g. {ctx.user}")
		}
		if len(allowed) > 0 && !slices.Contains(allowed, path) {
			return nil, fmt.Errorf("gin key %q is not one of the allowed keys %q", path, allowed)
		}
		return func(c *gin.Context) (string, error) {
			v, _ := c.Get(path)
			return stringOf(v), nil
		}, nil
	}
}

func stringOf(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case []byte:
		return string(x)
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case int32:
		return strconv.FormatInt(int64(x), 10)
	case uint:
		return strconv.FormatUint(uint64(x), 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	case uint32:
		return strconv.FormatUint(uint64(x), 10)
	case bool:
		return strconv.FormatBool(x)
	case fmt.Stringer:
		return x.String()
	default:
		return fmt.Sprint(x)
	}
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
