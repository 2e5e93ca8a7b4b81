// Package testwait holds test helpers that wait with a deadline instead of
// sleeping.
package testwait

import (
	"testing"
	"time"
)

// Timeout bounds every wait: long enough for a loaded CI machine, short
// enough to fail a hung test.
const Timeout = 10 * time.Second

// Recv receives from ch, or fails the test naming what it waited for.
func Recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(Timeout):
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}

// Eventually polls cond until it holds, or fails the test naming what it
// waited for after Timeout. The poll interval is not synchronisation: cond
// reads the state it waits for.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(Timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond) // polling a condition, not synchronising
	}
}

// Within is Eventually with its own bound, for conditions that take longer
// than Timeout on a loaded machine (or must come sooner).
func Within(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", within, what)
		}
		time.Sleep(2 * time.Millisecond) // polling a condition, not synchronising
	}
}
