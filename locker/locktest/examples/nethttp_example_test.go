package examples_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/locker/locktest"
	"github.com/locktag/locktag/middleware/stdhttp"
)

// payHandler is the code under test: it charges a card under the order's
// lock, and rolls back when it loses the lock midway.
type payHandler struct {
	charged, rolledBack atomic.Int32
	started             chan struct{} // closed when a charge starts; nil: do not block
	proceed             chan struct{} // the charge finishes when it is closed
}

func (p *payHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p.started != nil {
		close(p.started)
		select {
		case <-p.proceed:
		case <-r.Context().Done():
			if errors.Is(context.Cause(r.Context()), locker.ErrLockLost) {
				p.rolledBack.Add(1)
			}
			return // nothing written: the middleware answers 503
		}
	}
	p.charged.Add(1)
	w.WriteHeader(http.StatusCreated)
	fmt.Fprint(w, "charged")
}

// The states of a net/http handler behind stdhttp.Lock and
// stdhttp.Idempotency, each tested in a few lines. In a test, t is the
// test's *testing.T.
func Example_netHTTP() {
	var t locktest.Standalone
	defer t.Close()
	k := locktest.New(&t)
	const tag = `key:"order:{path.id}"`
	pay := &payHandler{}
	mux := http.NewServeMux()
	if err := stdhttp.MustLock(k.Locker(), tag).Handle(mux, "POST /orders/{id}/pay", pay); err != nil {
		panic(err)
	}
	post := func() *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("POST", "/orders/42/pay", nil))
		return rec
	}
	key := k.Key(tag, locktest.Values{"path.id": "42"}) // "order:42"

	// Held by another process: 409, and no charge.
	release := k.Hold(key)
	fmt.Println("held elsewhere:", post().Code, pay.charged.Load())
	release()

	// Redis down: 503; back up: served.
	k.Down()
	fmt.Println("Redis down:", post().Code)
	k.Up()
	fmt.Println("Redis back:", post().Code, pay.charged.Load())

	// The lease lost while the handler runs: its context is cancelled
	// with ErrLockLost, it rolls back, the client gets 503.
	pay.started, pay.proceed = make(chan struct{}), make(chan struct{})
	done := make(chan int)
	go func() { done <- post().Code }()
	<-pay.started
	k.Lose(key)
	fmt.Println("lease lost:", <-done, "rolled back:", pay.rolledBack.Load())
	// Output:
	// held elsewhere: 409 0
	// Redis down: 503
	// Redis back: 201 1
	// lease lost: 503 rolled back: 1
}

// A rate tag's key used up: 429 with Retry-After.
func Example_netHTTPRate() {
	var t locktest.Standalone
	defer t.Close()
	k := locktest.New(&t)
	const tag = `key:"api:{header.X-User}" rate:"10/1m"`
	h := stdhttp.MustLock(k.Locker(), tag).Wrap(&payHandler{})

	k.ExhaustRate(tag, locktest.Values{"header.X-User": "alice"})
	for _, user := range []string{"alice", "bob"} {
		r := httptest.NewRequest("POST", "/orders/42/pay", nil)
		r.Header.Set("X-User", user)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		fmt.Println(user, rec.Code, rec.Header().Get("Retry-After") != "")
	}
	// Output:
	// alice 429 true
	// bob 201 false
}

// An idempotency key whose first request completed (the retry replays
// it, the card is not charged again) or is still in flight (409).
func Example_netHTTPIdempotency() {
	var t locktest.Standalone
	defer t.Close()
	k := locktest.New(&t)
	pay := &payHandler{}
	scope := func(r *http.Request) (string, error) { return r.Header.Get("X-User"), nil }
	h := stdhttp.MustIdempotency(k.Locker(), guard.WithScope(scope)).Wrap(pay)
	payment := func(key string) *http.Request {
		r := httptest.NewRequest("POST", "/payments", strings.NewReader(`{"cents":1999}`))
		r.Header.Set("Idempotency-Key", key)
		r.Header.Set("X-User", "alice")
		return r
	}

	k.Completed(locktest.HTTPCall{Request: payment(`"pay-1"`), Route: "/payments", Scope: "alice"},
		http.StatusCreated, http.Header{"Content-Type": {"text/plain"}}, []byte("charged earlier"))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, payment(`"pay-1"`))
	fmt.Println("completed:", rec.Code, rec.Body, rec.Header().Get(stdhttp.ReplayedHeader), pay.charged.Load())

	release := k.InFlight(locktest.HTTPCall{Request: payment(`"pay-2"`), Route: "/payments", Scope: "alice"})
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, payment(`"pay-2"`))
	fmt.Println("in flight:", rec.Code, pay.charged.Load())
	release() // the first request failed: the key is free again
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, payment(`"pay-2"`))
	fmt.Println("freed:", rec.Code, pay.charged.Load())
	// Output:
	// completed: 201 charged earlier true 0
	// in flight: 409 0
	// freed: 201 1
}
