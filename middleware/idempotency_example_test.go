package middleware_test

import (
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/locker/redigo"
	"github.com/locktag/locktag/middleware"
)

func ExampleIdempotency() {
	srv, err := redistest.Launch() // a throw-away redis-server for the example
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	pool := &redis.Pool{Dial: func() (redis.Conn, error) { return redis.Dial("tcp", srv.Addr()) }}
	defer pool.Close()
	lk, err := locker.New(redigo.New(pool))
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()

	// The scope says who the caller is; here an authentication middleware
	// (not shown) stored the account id under "account".
	accountOf := func(c *gin.Context) (string, error) { return c.GetString("account"), nil }
	charges := 0
	r := gin.New()
	r.Use(gin.Recovery(), func(c *gin.Context) { c.Set("account", c.GetHeader("X-Demo-Account")) })
	r.POST("/payments",
		middleware.Idempotency(lk, guard.WithScope(accountOf)),
		func(c *gin.Context) {
			charges++
			c.JSON(http.StatusCreated, gin.H{"charge": charges})
		})

	send := func(key, body string) {
		req := httptest.NewRequest(http.MethodPost, "/payments", strings.NewReader(body))
		req.Header.Set("X-Demo-Account", "acct_1")
		req.Header.Set("Idempotency-Key", key)
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, req)
		fmt.Println(rec.Code, rec.Header().Get("Idempotent-Replayed"), rec.Body.String())
	}
	send(`"4f1c-payment-1"`, `{"amount":10}`) // executes
	send(`"4f1c-payment-1"`, `{"amount":10}`) // a retry: replayed
	send(`"4f1c-payment-1"`, `{"amount":99}`) // the key reused for another request
	fmt.Println("charges:", charges)
	// Output:
	// 201  {"charge":1}
	// 201 true {"charge":1}
	// 422  {"type":"https://github.com/locktag/locktag/blob/main/docs/idempotency.md#idempotency-key-reused","title":"Idempotency key reused","status":422,"detail":"this key was used with a different request; use a new key for a new request"}
	// charges: 1
}
