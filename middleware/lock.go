package middleware

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/locker"
)

// Lock returns a per-route middleware that holds the lock described by tag
// while the rest of the chain runs:
//
//	r.POST("/orders/:id/pay", middleware.Lock(lk, `key:"order:{path.id}" wait:"2s"`), pay)
//
// Lock panics if the tag or an option is invalid, with the error NewLock would
// return (for a bad tag a *keyexpr.TagError naming the tag, the field and
// the byte position). It is meant for tags written in code at registration.
//
// Per request: the key is resolved (an error is a 400, or 413 for an
// over-long body, before Redis is touched); the lock is obtained, waiting up
// to the tag's wait but never past the request's context; c.Request gets the
// lease's context; the chain runs; the lock is released — also when a
// handler panics, and the panic then continues to gin.Recovery. The handler
// never runs without the lock, unless WithFailOpen allows it when Redis is
// unavailable. If the lock is lost while the chain runs, the request's context
// is cancelled with cause locker.ErrLockLost and, if nothing was written yet,
// 503 is answered. See the package documentation for every status.
func Lock(l *locker.Locker, tag string, opts ...Option) gin.HandlerFunc {
	h, err := NewLock(l, tag, opts...)
	if err != nil {
		panic(err)
	}
	return h
}

// NewLock is like Lock but returns construction errors instead of panicking:
// ErrNilLocker, an error wrapping ErrBadOption, or a *keyexpr.TagError for a
// bad tag — including a key template that names an unknown source or a path
// its source rejects (errors.Is(err, keyexpr.ErrUnknownSource)).
func NewLock(l *locker.Locker, tag string, opts ...Option) (gin.HandlerFunc, error) {
	m, err := newMiddleware(l, opts)
	if err != nil {
		return nil, err
	}
	rt, err := m.compile(tag, nil)
	if err != nil {
		return nil, err
	}
	return func(c *gin.Context) { m.serve(c, rt) }, nil
}

// FailedOpen returns the error for which a WithFailOpen route ran its
// handler without the lock, or nil if the request holds its lock (or has no
// lock middleware). Handlers that must not run unprotected after all can
// check it and refuse.
func FailedOpen(c *gin.Context) error {
	v, _ := c.Get(failedOpenKey{})
	err, _ := v.(error)
	return err
}

type failedOpenKey struct{}

// middleware is what one Lock or LockRules call built: the locker, the
// options and the bound sources, shared by all its routes.
type middleware struct {
	l       *locker.Locker
	o       options
	sources keyexpr.Sources[*gin.Context]
}

// route is one compiled tag.
type route struct {
	key        *keyexpr.Key[*gin.Context]
	params     locker.Params
	retryAfter string // seconds, for 409
}

func newMiddleware(l *locker.Locker, opts []Option) (*middleware, error) {
	if l == nil {
		return nil, ErrNilLocker
	}
	o, err := evaluateOptions(opts)
	if err != nil {
		return nil, err
	}
	return &middleware{l: l, o: o, sources: o.sourceSet()}, nil
}

// compile parses tag and binds its key. routeParams, when not nil, are the
// parameter names of the route the tag is for; {path.X} must name one.
func (m *middleware) compile(tag string, routeParams []string) (*route, error) {
	spec, err := keyexpr.ParseTag(tag)
	if err != nil {
		return nil, err
	}
	key, err := keyexpr.BindSpec(spec, m.sources, keyexpr.WithMaxValueLen(m.o.maxValueLen))
	if err != nil {
		return nil, err
	}
	if _, custom := m.o.sources["path"]; routeParams != nil && !custom {
		if err := checkPathParams(spec.Key, routeParams); err != nil {
			return nil, spec.KeyError(err)
		}
	}
	return &route{
		key:        key,
		params:     locker.Params{TTL: spec.Expire, Wait: spec.Wait, Name: spec.Name, Template: spec.Key.String()},
		retryAfter: retryAfter(spec.Wait),
	}, nil
}

// retryAfter is the Retry-After value for a lock that stayed busy for wait:
// the wait rounded up to whole seconds, at least 1.
func retryAfter(wait time.Duration) string {
	s := (wait + time.Second - 1) / time.Second
	return strconv.FormatInt(int64(max(s, 1)), 10)
}

// serve runs one request through route rt.
func (m *middleware) serve(c *gin.Context, rt *route) {
	name, err := rt.key.Eval(c)
	if err != nil {
		c.Set(lockRefusedKey{}, true)
		m.refuse(c, err, keyStatus(err))
		return
	}
	orig := c.Request
	p := rt.params
	if p.Name == "" {
		p.Name = c.FullPath() // the route: low cardinality, for spans and metrics
	}
	lease, err := m.l.Obtain(orig.Context(), name, p)
	if err != nil {
		if m.o.failOpen && errors.Is(err, locker.ErrUnavailable) {
			c.Set(failedOpenKey{}, err)
			_ = c.Error(err)
			c.Next()
			return
		}
		status := obtainStatus(err)
		if status == http.StatusConflict {
			c.Header("Retry-After", rt.retryAfter)
		}
		c.Set(lockRefusedKey{}, true)
		m.refuse(c, err, status)
		return
	}
	locked := orig.WithContext(lease.Context())
	c.Request = locked
	// Deferred so that it runs when a handler panics; the panic goes on.
	defer m.release(c, orig, locked, lease)
	c.Next()
	if lease.Lost() {
		if c.Writer.Written() {
			_ = c.Error(locker.ErrLockLost) // too late to say so to the client
		} else {
			m.refuse(c, locker.ErrLockLost, http.StatusServiceUnavailable)
		}
	}
}

// release releases the lease on a context that outlives the request's and
// gives the chain back the request it had before the lock.
func (m *middleware) release(c *gin.Context, orig, locked *http.Request, lease *locker.Lease) {
	err := lease.Release(context.WithoutCancel(orig.Context()))
	if err != nil && !lease.Lost() {
		_ = c.Error(err) // the lease runs out in Redis on its own
	}
	if c.Request == locked {
		c.Request = orig
	} else if c.Request != nil {
		c.Request = c.Request.WithContext(orig.Context())
	}
}

// refuse aborts the chain and hands err to the error handler.
// lockRefusedKey marks a request the Lock middleware refused before the
// handler ran (bad key, busy, Redis unavailable); an Idempotency guard
// around it then stores nothing.
type lockRefusedKey struct{}

func (m *middleware) refuse(c *gin.Context, err error, status int) {
	_ = c.Error(err)
	c.Abort()
	m.o.errorHandler(c, err, status)
}
