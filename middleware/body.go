package middleware

import (
	"github.com/gin-gonic/gin"

	"github.com/locktag/locktag/middleware/internal/httpcore"
)

// bodyKey is the gin key under which a request's parsed body is cached, so
// two {body...} placeholders (or two middlewares) read and parse it once.
type bodyKey struct{}

// bodyGetter serves {body.a.b}: the JSON field at a.b (httpcore.Parsed).
// maxBytes is read per request: it is set once the guards are built.
func bodyGetter(path string, maxBytes *int64) getter {
	segs := httpcore.Segments(path)
	return func(c *gin.Context) (string, error) {
		return loadBody(c, *maxBytes).Field(segs, *maxBytes)
	}
}

// loadBody reads, restores and parses the body once per request.
func loadBody(c *gin.Context, maxBytes int64) *httpcore.Parsed {
	if v, ok := c.Get(bodyKey{}); ok {
		if pb, ok := v.(*httpcore.Parsed); ok {
			return pb
		}
	}
	pb := httpcore.Parse(readBody(c, maxBytes))
	c.Set(bodyKey{}, pb)
	return pb
}

// readBody reads at most maxBytes of the body and puts the bytes back as
// c.Request.Body (and under gin.BodyBytesKey, which c.ShouldBindBodyWith
// uses), so the handler reads the whole body as sent.
func readBody(c *gin.Context, maxBytes int64) ([]byte, error) {
	if v, ok := c.Get(gin.BodyBytesKey); ok {
		if b, ok := v.([]byte); ok {
			return b, nil // an earlier middleware consumed and kept it
		}
	}
	raw, err := httpcore.ReadBody(c.Request, maxBytes)
	if err == nil && raw != nil {
		c.Set(gin.BodyBytesKey, raw)
	}
	return raw, err
}
