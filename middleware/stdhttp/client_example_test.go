package stdhttp_test

import (
	"errors"
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

// A request given up is a *RetryError carrying its idempotency key: sent
// again later with that key, the operation runs once — or, if it ran
// already, its answer is replayed.
func ExampleRetryError() {
	lk, err := locker.New(redigo.New(exampleRedis.NewPool()))
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()
	var calls, charges atomic.Int32
	guarded := stdhttp.MustIdempotency(lk, guard.WithPublicScope()).Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "charge %d", charges.Add(1))
	}))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 2 { // down for the first two requests
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		guarded.ServeHTTP(w, r)
	}))
	defer srv.Close()
	client := &http.Client{Transport: stdhttp.NewRetryTransport(nil, retry.New(retry.WithMaxAttempts(2)))}

	_, err = client.Post(srv.URL+"/payments", "application/json", strings.NewReader(`{"amount":100}`))
	var re *stdhttp.RetryError
	if !errors.As(err, &re) {
		log.Fatal(err)
	}
	fmt.Println("gave up:", errors.Is(err, stdhttp.ErrBudgetExhausted), re.Attempts, "attempts, last status", re.StatusCode)

	for range 2 { // later: the same operation, with the same key
		req, _ := http.NewRequest("POST", srv.URL+"/payments", strings.NewReader(`{"amount":100}`))
		req.Header.Set("Idempotency-Key", re.Key)
		resp, err := client.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(resp.Status, string(body), "replayed:", resp.Header.Get(stdhttp.ReplayedHeader) == "true")
	}
	// Output:
	// gave up: true 2 attempts, last status 503
	// 200 OK charge 1 replayed: false
	// 200 OK charge 1 replayed: true
}

// IdempotencyKeyOf gives the key of a response. Here the answer is
// longer than WithMaxBufferedBody, so it is returned as a stream, and a
// connection lost while the caller reads it would be the caller's to
// retry, with that key.
func ExampleIdempotencyKeyOf() {
	lk, err := locker.New(redigo.New(exampleRedis.NewPool()))
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()
	var charges atomic.Int32
	srv := httptest.NewServer(stdhttp.MustIdempotency(lk, guard.WithPublicScope()).Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "charge %d: %s", charges.Add(1), strings.Repeat(".", 100))
	})))
	defer srv.Close()
	client := &http.Client{Transport: stdhttp.NewRetryTransport(nil, nil, stdhttp.WithMaxBufferedBody(64))}

	resp, err := client.Post(srv.URL+"/payments", "application/json", strings.NewReader(`{"amount":100}`))
	if err != nil {
		log.Fatal(err)
	}
	key := stdhttp.IdempotencyKeyOf(resp)
	_, err = io.Copy(io.Discard, resp.Body) // a stream: an error here would leave the outcome to check
	resp.Body.Close()
	if err != nil {
		log.Fatal(err)
	}

	req, _ := http.NewRequest("POST", srv.URL+"/payments", strings.NewReader(`{"amount":100}`))
	req.Header.Set("Idempotency-Key", key)
	resp, err = client.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(string(body[:8]), "replayed:", resp.Header.Get(stdhttp.ReplayedHeader) == "true", "same key:", stdhttp.IdempotencyKeyOf(resp) == key)
	// Output: charge 1 replayed: true same key: true
}
