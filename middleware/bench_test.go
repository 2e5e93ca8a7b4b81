package middleware_test

import (
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/middleware"
)

// discard is a ResponseWriter that keeps only the status, so the benchmarks
// measure the route and not a recorder.
type discard struct {
	h    http.Header
	code int
}

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }
func (d *discard) WriteHeader(code int)        { d.code = code }

func (d *discard) reset() {
	clear(d.h)
	d.code = http.StatusOK
}

// BenchmarkRoute serves one Gin route in-process (no network to the route;
// Redis is a local redis-server) in four ways: no lock; the Lock middleware;
// the Lock middleware with a key from the JSON body; and the same lock taken
// by hand with lk.Obtain and Release around the handler.
//
//	go test -run '^$' -bench BenchmarkRoute -benchmem ./middleware/
func BenchmarkRoute(b *testing.B) {
	_, lk := setup(b)
	handler := func(c *gin.Context) { c.Status(http.StatusNoContent) }
	byHand := func(c *gin.Context) {
		ctx := c.Request.Context()
		le, err := lk.Obtain(ctx, "order:"+c.Param("id"), locker.Params{})
		if err != nil {
			c.Status(http.StatusConflict)
			return
		}
		defer le.Release(ctx)
		handler(c)
	}
	tag := `key:"order:{path.id}"`
	for _, bc := range []struct {
		name  string
		chain []gin.HandlerFunc
		body  string
	}{
		{"none", []gin.HandlerFunc{handler}, ""},
		{"Lock", []gin.HandlerFunc{middleware.Lock(lk, tag), handler}, ""},
		{"Lock-body", []gin.HandlerFunc{middleware.Lock(lk, `key:"order:{path.id}:{body.item.sku}"`), handler}, `{"item":{"sku":"A-1"},"qty":2}`},
		{"Obtain-Release", []gin.HandlerFunc{byHand}, ""},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r := gin.New()
			r.POST("/orders/:id/pay", bc.chain...)
			w := &discard{h: http.Header{}}
			req, _ := http.NewRequest(http.MethodPost, "/orders/42/pay", nil)
			b.ReportAllocs()
			for b.Loop() {
				if bc.body != "" {
					req.Body = nopCloser{strings.NewReader(bc.body)}
					req.ContentLength = int64(len(bc.body))
				}
				w.reset()
				r.ServeHTTP(w, req)
				if w.code != http.StatusNoContent {
					b.Fatalf("status %d", w.code)
				}
			}
		})
	}
}

// BenchmarkRouteParallel is BenchmarkRoute's Lock case from parallel
// goroutines, each on its own key (no contention; Redis round trips overlap).
func BenchmarkRouteParallel(b *testing.B) {
	_, lk := setup(b)
	r := gin.New()
	r.POST("/orders/:id/pay", middleware.Lock(lk, `key:"order:{path.id}"`), func(c *gin.Context) { c.Status(http.StatusNoContent) })
	var next atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		req, _ := http.NewRequest(http.MethodPost, "/orders/"+strconv.FormatInt(next.Add(1), 10)+"/pay", nil)
		w := &discard{h: http.Header{}}
		for pb.Next() {
			w.reset()
			r.ServeHTTP(w, req)
			if w.code != http.StatusNoContent {
				b.Errorf("status %d", w.code)
				return
			}
		}
	})
}

type nopCloser struct{ *strings.Reader }

func (nopCloser) Close() error { return nil }
