package stdhttp_test

import (
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/locker/redigo"
	"github.com/locktag/locktag/middleware/stdhttp"
)

// ExampleLock_Handle locks a ServeMux route by its {id} wildcard; the
// pattern is checked against the tag when the route is registered.
func ExampleLock_Handle() {
	lk, err := locker.New(redigo.New(exampleRedis.NewPool()))
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()
	mux := http.NewServeMux()
	pay := stdhttp.MustLock(lk, `key:"order:{path.id}" wait:"2s"`)
	err = pay.Handle(mux, "POST /orders/{id}/pay", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "paid while holding", locker.FromContext(r.Context()).Key())
	}))
	fmt.Println(err)
	fmt.Println(pay.Check("POST /orders/{orderId}/pay") != nil)

	w := httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest("POST", "/orders/42/pay", nil))
	fmt.Print(w.Code, " ", w.Body)
	// Output:
	// <nil>
	// true
	// 200 paid while holding order:42
}

// ExampleIdempotency_Wrap replays the first response to a retry with the
// same Idempotency-Key.
func ExampleIdempotency_Wrap() {
	lk, err := locker.New(redigo.New(exampleRedis.NewPool()))
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()
	idem := stdhttp.MustIdempotency(lk, guard.WithScope(func(r *http.Request) (string, error) {
		return r.Header.Get("X-Account"), nil // from your authentication
	}))
	charges := 0
	h := idem.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		charges++
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, "charge %d", charges)
	}))
	key := fmt.Sprint("example-", time.Now().UnixNano()) // a new key for every run of the example
	for range 2 {
		r := httptest.NewRequest("POST", "/payments", nil)
		r.Header.Set("Idempotency-Key", key)
		r.Header.Set("X-Account", "acct-1")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Printf("%d %s replayed=%q\n", w.Code, w.Body, w.Header().Get(stdhttp.ReplayedHeader))
	}
	// Output:
	// 201 charge 1 replayed=""
	// 201 charge 1 replayed="true"
}

// ExampleCheckRoute checks the locks on routes before traffic. With chi,
// chi.Walk(r, stdhttp.CheckRoute) calls it for every route of a router;
// here it is called by hand for two routes: a lock as the handler, and a
// lock among the route's middlewares.
func ExampleCheckRoute() {
	lk, err := locker.New(redigo.New(exampleRedis.NewPool()))
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()
	pay := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	good := stdhttp.MustLock(lk, `key:"order:{path.id}"`)
	bad := stdhttp.MustLock(lk, `key:"order:{path.orderId}"`)
	fmt.Println(stdhttp.CheckRoute("POST", "/orders/{id}/pay", good.Wrap(pay)))
	fmt.Println(stdhttp.CheckRoute("POST", "/orders/{id}/pay", pay, bad.Wrap))
	// Output:
	// <nil>
	// guard: bad rule: POST /orders/{id}/pay: keyexpr: tag `key:"order:{path.orderId}"`: field key at byte 11: template "order:{path.orderId}": placeholder {path.orderId} at byte 6: the rule's route has no parameter {orderId} (it has {id})
}

// ExampleNewLock_rate limits each user to 2 requests a minute, checked
// before the order's lock so a refused request never queues for it. The
// third request is refused with 429, Retry-After and the RateLimit
// fields; admitted ones carry the RateLimit fields too.
func ExampleNewLock_rate() {
	lk, err := locker.New(redigo.New(exampleRedis.NewPool()))
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()
	perUser := stdhttp.MustLock(lk, `key:"api:{header.X-User}" rate:"2/1m"`)
	perOrder := stdhttp.MustLock(lk, `key:"order:{path.id}" wait:"2s"`)
	mux := http.NewServeMux()
	mux.Handle("POST /orders/{id}/pay", perUser.Wrap(perOrder.WrapFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "paid")
	})))

	user := fmt.Sprint("u-", time.Now().UnixNano()) // a new user for every run of the example
	for range 3 {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("POST", "/orders/42/pay", nil)
		r.Header.Set("X-User", user)
		mux.ServeHTTP(w, r)
		fmt.Println(w.Code, w.Header().Get("Retry-After"), w.Header().Get("RateLimit-Policy"), w.Header().Get("RateLimit"))
	}
	// Output:
	// 200  "default";q=2;w=60 "default";r=1;t=30
	// 200  "default";q=2;w=60 "default";r=0;t=60
	// 429 30 "default";q=2;w=60 "default";r=0;t=30
}
