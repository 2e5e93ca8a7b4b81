package protocol

import (
	"fmt"
	"strings"
	"testing"

	"github.com/locktag/locktag/internal/redistest"
)

// TestIdemInspect: idem_inspect reads a record in each state and its
// waiters, and leaves every key as it was, byte for byte, with its expiry.
func TestIdemInspect(t *testing.T) {
	srv := redistest.Start(t)
	keys := []string{"t:{idem:x}:r", "t:{idem:x}:rw"}
	fp := strings.Repeat("ab", 32)
	owner, waiter := "AAAAAAAAAAAAAAAAAAAAAA", "BBBBBBBBBBBBBBBBBBBBBB"
	// inspect returns the reply with its PTTL checked (in (0, most] ms)
	// and masked as "#".
	inspect := func(what string, most int64) string {
		t.Helper()
		before := snapshot(t, srv, keys)
		v := eval(t, srv, IdemInspect, keys)
		if after := snapshot(t, srv, keys); after != before {
			t.Fatalf("%s: the record changed:\nbefore %s\nafter  %s", what, before, after)
		}
		a, ok := v.([]any)
		if !ok {
			return reply(v)
		}
		if len(a) != 5 {
			t.Fatalf("%s: reply %s, want 5 fields", what, reply(v))
		}
		if pttl, _ := a[2].(int64); pttl <= 0 || pttl > most {
			t.Fatalf("%s: pttl %v, want in (0, %d]", what, a[2], most)
		}
		a[2] = "#"
		return reply(a)
	}
	if r := inspect("no record", 0); r != fmt.Sprint(nil) {
		t.Fatalf("no record: %s, want nil", r)
	}
	if r := reply(eval(t, srv, IdemBegin, keys, fp, owner, 10000, 0)); r != "[1]" {
		t.Fatalf("claim: %s", r)
	}
	if r := inspect("in flight", 10000); r != "[p "+fp+" # 0 "+owner+"]" {
		t.Fatalf("in flight: %s", r)
	}
	if r := reply(eval(t, srv, IdemBegin, keys, fp, waiter, 10000, 5000)); !strings.HasPrefix(r, "[2 ") {
		t.Fatalf("waiter: %s", r)
	}
	if r := inspect("in flight, waited for", 10000); r != "[p "+fp+" # 1 "+owner+"]" {
		t.Fatalf("in flight with a waiter: %s", r)
	}
	if r := reply(eval(t, srv, IdemEnd, keys, owner, "c", "H1 outcome", 60000, "t:{idem:x}:rc")); r != "1" {
		t.Fatalf("complete: %s", r)
	}
	if r := inspect("done", 60000); r != "[d "+fp+" # 0 ]" {
		t.Fatalf("done: %s", r)
	}
}
