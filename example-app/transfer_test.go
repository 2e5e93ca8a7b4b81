package main

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/locktag/locktag/middleware"
)

// TestTransfers: concurrent transfers both ways between two accounts (and
// to the same account) all succeed, without deadlock, and lose no update;
// the same handler without the tag is the control.
func TestTransfers(t *testing.T) {
	_, lk := realRedis(t)
	run := func(locked bool) (a, b int64, failed int) {
		acc := &accounts{balance: map[string]int64{"a": 10000, "b": 10000}, latency: time.Millisecond}
		r := gin.New()
		r.Use(middleware.RouteCheck())
		addTransferRoutes(r, lk, acc)
		if locked {
			if err := middleware.CheckRoutes(r); err != nil {
				t.Fatal(err)
			}
		} else {
			// The control: the same handler without the tag.
			r = gin.New()
			addUnlocked(r, acc)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		for i := range 20 {
			body := `{"from":"a","to":"b","amount_cents":10}`
			switch i % 3 {
			case 1:
				body = `{"from":"b","to":"a","amount_cents":7}`
			case 2:
				body = `{"from":"a","to":"a","amount_cents":5}`
			}
			wg.Go(func() {
				if rec := post(r, "/transfers", body); rec.Code != http.StatusOK {
					mu.Lock()
					failed++
					mu.Unlock()
					t.Log(rec.Code, rec.Body.String())
				}
			})
		}
		wg.Wait()
		return acc.get("a"), acc.get("b"), failed
	}
	a, b, failed := run(true)
	// 7 transfers a→b of 10, 7 b→a of 7 (i%3 == 1 for 7 of 20), 6 a→a.
	if failed != 0 || a != 10000-70+49 || b != 10000+70-49 {
		t.Fatalf("locked: a %d b %d, %d failed", a, b, failed)
	}
	if a, b, _ := run(false); a+b == 20000 && a == 10000-70+49 {
		t.Fatalf("control: no update lost without the lock (a %d b %d); the test cannot tell", a, b)
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/accounts/a", nil)
	r := gin.New()
	addTransferRoutes(r, lk, &accounts{balance: map[string]int64{"a": 5}})
	r.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || rec.Body.String() != `{"balance_cents":`+strconv.Itoa(5)+`,"id":"a"}` {
		t.Fatalf("GET /accounts/a: %d %s", rec.Code, rec.Body.String())
	}
}

// addUnlocked is POST /transfers without its tag: the test's control.
func addUnlocked(r *gin.Engine, a *accounts) { r.POST("/transfers", transfer(a)) }
