package job_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/locktag/locktag/locker/job"
)

// A readiness endpoint that is ready on the leader only: a Kubernetes
// Service whose pods probe it routes to the leader alone.
func ExampleReadyHandler() {
	lk := exampleLocker() // one Locker per process: locker.New(redigo.New(pool), locker.WithLabel(hostname))
	defer lk.Close()
	el, err := job.NewElector(lk, "leader:billing")
	if err != nil {
		log.Fatal(err)
	}
	ready, err := job.ReadyHandler(el)
	if err != nil {
		log.Fatal(err) // an invalid option: errors.Is(err, locker.ErrBadOption)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /ready", ready)

	probe := func() {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/ready", nil))
		fmt.Println(rec.Code, rec.Header().Get("Content-Type"))
	}
	probe()
	ctx := context.Background()
	term, err := el.Campaign(ctx) // usually: go el.Run(ctx, lead)
	if err != nil {
		log.Fatal(err)
	}
	probe()
	_ = term.Resign(ctx)
	probe()
	// Output:
	// 503 application/json
	// 200 application/json
	// 503 application/json
}
