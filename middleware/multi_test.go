package middleware_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/middleware"
)

// TestTransferTags is the use case: two routes that move money
// between the same accounts in opposite directions. Chaining two lock
// tags per route (source, then destination) deadlocks until the waits run
// out and answers 409; one `keys` tag per route lets every request
// through.
func TestTransferTags(t *testing.T) {
	_, lk := setup(t)
	const wait = `wait:"1s"`
	hold := func(c *gin.Context) { c.Status(http.StatusOK) }
	// Between the two chained tags, each request waits (bounded) until the
	// other holds its first lock too: the interleaving that deadlocks.
	var firstHeld sync.WaitGroup
	barrier := func(c *gin.Context) {
		firstHeld.Done()
		done := make(chan struct{})
		go func() { firstHeld.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(testwait.Timeout):
		}
	}
	r := gin.New()
	r.POST("/chained/:from/:to",
		middleware.Lock(lk, `key:"acct:{path.from}" `+wait), barrier,
		middleware.Lock(lk, `key:"acct:{path.to}" `+wait), hold)
	r.POST("/multi/:from/:to", middleware.Lock(lk, `keys:"acct:{path.from},acct:{path.to}" `+wait), hold)

	run := func(route string) (codes []int) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		for _, path := range []string{"/1/2", "/2/1"} {
			wg.Go(func() {
				rec := do(r, http.MethodPost, route+path, "")
				mu.Lock()
				codes = append(codes, rec.Code)
				mu.Unlock()
			})
		}
		wg.Wait()
		return codes
	}
	firstHeld.Add(2)
	conflicts := 0
	for _, code := range run("/chained") {
		if code == http.StatusConflict {
			conflicts++
		}
	}
	if conflicts == 0 {
		t.Fatal("control: chained tags in opposite orders never deadlocked into a 409; the test cannot tell")
	}
	for range 3 {
		for _, code := range run("/multi") {
			if code != http.StatusOK {
				t.Fatalf("keys tag: %d, want 200", code)
			}
		}
	}
	if rec := do(r, http.MethodPost, "/multi/3/3", ""); rec.Code != http.StatusOK {
		t.Fatalf("same account: %d", rec.Code)
	}
}
