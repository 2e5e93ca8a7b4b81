// Package drivertest checks that a [driver.Driver] keeps the contract the
// lock core relies on, against a real Redis server — in the spirit of
// testing/fstest. A driver author calls [Run] from a test:
//
//	func TestContract(t *testing.T) {
//		drivertest.Run(t, drivertest.Config{
//			Addr: addr, // a redis-server the suite may flush scripts on and kill clients of
//			New: func(t testing.TB, addr string) driver.Driver {
//				return mydriver.New(addr)
//			},
//		})
//	}
//
// The suite checks reply types, keys and arguments, the NOSCRIPT fallback,
// context deadlines and cancellation, ErrNotSent for calls that never left
// the client, concurrent calls, and the Listener: Subscribe confirmed before
// it returns, delivery in order, Unsubscribe, broken reported once, and
// Close reporting nothing.
package drivertest
