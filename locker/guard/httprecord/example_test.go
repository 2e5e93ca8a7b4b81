package httprecord_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/locker/guard/httprecord"
)

// The record of a first POST /payments, as the HTTP adapters would have
// stored it: its name and fingerprint, and the stored response.
func Example() {
	body := `{"amount_cents":1999}`
	r := httptest.NewRequest(http.MethodPost, "/payments", strings.NewReader(body))
	r.Header.Set("Idempotency-Key", `"pay-1"`)

	q := httprecord.Request(r, "/payments", "Idempotency-Key", nil)
	name, fp, err := q.Identity("user:alice", []byte(body))
	if err != nil {
		panic(err)
	}
	fmt.Println(q.Route, len(name) > 0, len(fp) > 0)

	h := http.Header{"Content-Type": {"application/json"}}
	payload := httprecord.EncodeResponse(h, []string{"Content-Type"}, []byte(`{"id":"pay_1"}`))
	record := guard.EncodeRecord(httprecord.Format, guard.Answer{Status: http.StatusCreated, Payload: payload})
	fmt.Printf("%s %q\n", record[:2], payload)
	// Output:
	// POST /payments true true
	// H1 "\x01\fContent-Type\x10application/json{\"id\":\"pay_1\"}"
}
