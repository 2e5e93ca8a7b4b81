// Package locktest is a test kit for code that uses locktag: a Redis for
// each test, on which locktag's real scripts run, and the means to put a
// guarded handler into each state worth a test, from outside the handler.
//
//	func TestPayWhileHeld(t *testing.T) {
//		k := locktest.New(t) // an embedded miniredis, stopped by t.Cleanup
//		h := stdhttp.MustLock(k.Locker(), `key:"order:{path.id}"`).Wrap(pay)
//
//		release := k.Hold("order:42") // another process holds the lock
//		rec := httptest.NewRecorder()
//		h.ServeHTTP(rec, httptest.NewRequest("POST", "/orders/42/pay", nil))
//		// rec.Code == 409, and pay did not run
//		release()
//	}
//
// The states, each a method of Kit:
//
//   - Hold, HoldTag: the lock is held by another process (409, 429 for a
//     full limit; gRPC Aborted, ResourceExhausted).
//   - Lose: the holder loses its lock now; the handler's context is
//     cancelled with cause locker.ErrLockLost.
//   - Down, Up: Redis goes away and comes back (503; gRPC Unavailable).
//   - ExhaustRate: a `rate` tag's key is used up (429).
//   - Completed, InFlight: an idempotency key's first request completed
//     (the retry replays it) or still runs (409).
//   - Advance: the embedded server's clock and every time to live move on.
//
// Key and Keys give the lock name a tag resolves for a request's values,
// as the guard resolves it; WaitHeld waits until the handler holds it.
//
// # The server
//
// New starts an embedded miniredis (github.com/alicebob/miniredis/v2): it
// runs every script locktag uses — each lock kind with waiting and
// hand-over, watchdog renewal, fencing, force-release notices, rate
// limits, idempotency records and their waits — so tests need no Redis
// installed. miniredis is not Redis: it is a model for tests of your
// code, not of Redis's behaviour. WithRedisServer, or the ServerEnv
// variable for a whole run, starts a redis-server instead (the test is
// skipped when it is not installed); Advance needs miniredis. Each Kit has
// its own server, so tests can run in parallel. See docs/testing.md.
//
// A Kit's methods fail the test when they cannot do what they say; call
// them from the test's goroutine. Outside a test (TestMain, an Example), a
// Standalone is the T.
package locktest
