package stdhttp_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/locktag/locktag/middleware/stdhttp"
)

// TestKeepAfter2xxOnly: a keep tag keeps the lock after a 2xx answer (the
// resubmit is 409) and not after a non-2xx one (the retry runs).
func TestKeepAfter2xxOnly(t *testing.T) {
	lk := newLocker(t)
	// The package's tests share one redis-server: a key of this run's own.
	target := "/pay?id=" + strconv.FormatInt(time.Now().UnixNano(), 10)
	status := http.StatusUnprocessableEntity
	h := stdhttp.MustLock(lk, `key:"keep:{query.id}" keep:"1m"`).WrapFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(status)
	})
	for i, want := range []int{422, 422} {
		if got := send(h, "POST", target, "").Code; got != want {
			t.Fatalf("request %d after a 422: %d, want %d (a non-2xx answer keeps nothing)", i, got, want)
		}
	}
	status = http.StatusCreated
	if got := send(h, "POST", target, "").Code; got != http.StatusCreated {
		t.Fatalf("first 2xx: %d", got)
	}
	if got := send(h, "POST", target, "").Code; got != http.StatusConflict {
		t.Fatalf("resubmit after a 201: %d, want 409", got)
	}
}
