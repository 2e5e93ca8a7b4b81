package stdhttp_test

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"time"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/locker/guard/retry"
	"github.com/locktag/locktag/locker/redigo"
	"github.com/locktag/locktag/middleware/stdhttp"
)

// A client whose POSTs are retried with one Idempotency-Key each, against
// a guarded server that is unavailable for its first request.
func ExampleNewRetryTransport() {
	lk, err := locker.New(redigo.New(exampleRedis.NewPool()))
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()
	var calls, charges atomic.Int32
	charge := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "charge %d", charges.Add(1))
	})
	guarded := stdhttp.MustIdempotency(lk, guard.WithPublicScope()).Wrap(charge)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "starting up", http.StatusServiceUnavailable)
			return
		}
		guarded.ServeHTTP(w, r)
	}))
	defer srv.Close()

	client := &http.Client{Transport: stdhttp.NewRetryTransport(nil, retry.New(
		retry.WithMaxRetryAfter(50*time.Millisecond), // wait at most 50ms where the server asks for more
		retry.WithBudget(10*time.Second),
	))}
	resp, err := client.Post(srv.URL+"/payments", "application/json", strings.NewReader(`{"amount":100}`))
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.Status, string(body), "after", calls.Load(), "requests")
	// Output: 200 OK charge 1 after 2 requests
}
