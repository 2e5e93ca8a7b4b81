package middleware

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
)

// bodyKey is the gin key under which a request's parsed body is cached, so
// two {body...} placeholders (or two middlewares) read and parse it once.
type bodyKey struct{}

// parsedBody is one request's body as the {body...} source sees it.
type parsedBody struct {
	size int   // bytes read
	tree any   // json.Decoder output with UseNumber; nil for an empty body
	err  error // reading or parsing failed
}

// bodyGetter serves {body.a.b}: the JSON field at a.b. Numbers are returned
// exactly as sent, strings unquoted, booleans as "true"/"false"; a missing
// field or null is a missing value, an object or array an error.
// maxBytes is read per request: it is set once the guards are built.
func bodyGetter(path string, maxBytes *int64) getter {
	segs := strings.Split(path, ".")
	return func(c *gin.Context) (string, error) {
		maxBytes := *maxBytes
		pb := loadBody(c, maxBytes)
		if pb.err != nil {
			return "", pb.err
		}
		if int64(pb.size) > maxBytes {
			return "", ErrBodyTooLarge // cached by a middleware with a larger cap
		}
		return lookup(pb.tree, segs)
	}
}

// loadBody reads, restores and parses the body once per request.
func loadBody(c *gin.Context, maxBytes int64) *parsedBody {
	if v, ok := c.Get(bodyKey{}); ok {
		if pb, ok := v.(*parsedBody); ok {
			return pb
		}
	}
	pb := &parsedBody{}
	raw, err := readBody(c, maxBytes)
	pb.size = len(raw)
	switch {
	case err != nil:
		pb.err = err
	case len(raw) > 0:
		pb.tree, pb.err = parseJSON(raw)
	}
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
	r := c.Request
	if r.ContentLength > maxBytes {
		return nil, ErrBodyTooLarge
	}
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, maxBytes+1))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, ErrBodyTooLarge
		}
		return nil, fmt.Errorf("%w: reading it failed: %w", ErrBodyNotJSON, err)
	}
	if int64(len(raw)) > maxBytes {
		return nil, ErrBodyTooLarge
	}
	r.Body = &replayBody{Reader: bytes.NewReader(raw), orig: r.Body}
	c.Set(gin.BodyBytesKey, raw)
	return raw, nil
}

// replayBody serves the bytes already read and closes the original body.
type replayBody struct {
	*bytes.Reader
	orig io.Closer
}

func (b *replayBody) Close() error { return b.orig.Close() }

// parseJSON parses exactly one JSON value, keeping numbers as json.Number.
func parseJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBodyNotJSON, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: data after the first JSON value", ErrBodyNotJSON)
	}
	return v, nil
}

// lookup walks segs through objects (by member name) and arrays (by decimal
// index) and returns the scalar found there as a string.
func lookup(v any, segs []string) (string, error) {
	for _, seg := range segs {
		switch x := v.(type) {
		case map[string]any:
			v = x[seg]
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(x) {
				return "", nil
			}
			v = x[i]
		default:
			return "", nil // missing: no such member
		}
	}
	switch x := v.(type) {
	case nil:
		return "", nil
	case string:
		return x, nil
	case json.Number:
		return string(x), nil
	case bool:
		return strconv.FormatBool(x), nil
	default:
		return "", ErrBodyNotScalar
	}
}
