package httpcore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// ReadBody reads at most maxBytes of r's body and puts the bytes back as
// r.Body, so the handler reads the whole body as sent. A body this
// function restored and nobody has read since is returned again without
// a copy, so two readers of one request (an idempotency guard and a
// {body...} placeholder) read it once. Over the cap: ErrBodyTooLarge.
func ReadBody(r *http.Request, maxBytes int64) ([]byte, error) {
	if rb, ok := r.Body.(*replayBody); ok && rb.Reader.Len() == len(rb.raw) {
		if int64(len(rb.raw)) > maxBytes {
			return nil, ErrBodyTooLarge
		}
		return rb.raw, nil
	}
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
	r.Body = &replayBody{Reader: bytes.NewReader(raw), raw: raw, orig: r.Body}
	return raw, nil
}

// replayBody serves the bytes already read and closes the original body.
type replayBody struct {
	*bytes.Reader
	raw    []byte
	orig   io.Closer
	parsed *Parsed // ParseBody's, while nobody has read the body
}

func (b *replayBody) Close() error { return b.orig.Close() }

// Parsed is one request's body as the {body...} source sees it.
type Parsed struct {
	Size int   // bytes read
	Tree any   // json.Decoder output with UseNumber; nil for an empty body
	Err  error // reading or parsing failed
}

// Parse reads (ReadBody) and parses r's body.
func Parse(raw []byte, err error) *Parsed {
	pb := &Parsed{Size: len(raw), Err: err}
	if err == nil && len(raw) > 0 {
		pb.Tree, pb.Err = parseJSON(raw)
	}
	return pb
}

// Field returns the JSON field at segs of a body read with a cap of
// maxBytes: numbers exactly as sent, strings unquoted, booleans as
// "true"/"false"; a missing field or null is "", an object or array
// ErrBodyNotScalar.
func (pb *Parsed) Field(segs []string, maxBytes int64) (string, error) {
	if pb.Err != nil {
		return "", pb.Err
	}
	if int64(pb.Size) > maxBytes {
		return "", ErrBodyTooLarge // cached by a guard with a larger cap
	}
	return lookup(pb.Tree, segs)
}

// ParseBody reads r's body (ReadBody) and parses it, once per request:
// the parse is kept with the restored body until a reader consumes it.
func ParseBody(r *http.Request, maxBytes int64) *Parsed {
	if rb, ok := r.Body.(*replayBody); ok && rb.parsed != nil && rb.Reader.Len() == len(rb.raw) {
		return rb.parsed
	}
	pb := Parse(ReadBody(r, maxBytes))
	if rb, ok := r.Body.(*replayBody); ok {
		rb.parsed = pb
	}
	return pb
}

// Segments splits a {body.a.b} path.
func Segments(path string) []string { return strings.Split(path, ".") }

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
