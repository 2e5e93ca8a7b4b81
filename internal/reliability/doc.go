// Package reliability is locktag's fault and abuse suite. It has no code
// outside its tests; see docs/reliability.md for what each test injects and
// what it asserts.
//
// The workload checker (workload_test.go) runs clients — goroutines over
// separate connection pools and separate OS processes — that do a
// read-modify-write of a shared counter under a lock, records every critical
// section (client, fencing token, start, end, whether the release confirmed
// the lock was still held) and checks that confirmed sections never overlap
// and that no update is lost; the counter lives in a fenced store that
// refuses stale fencing tokens (locker.Fence). Each check has a control run
// with a broken lock, or without fencing, that shows it catches the anomaly.
//
// The scenarios kill, stop and restart processes, cut, slow and reset
// connections with an embedded toxiproxy, starve connection pools, try wrong
// credentials and send hostile requests through the Gin and gRPC adapters.
//
// Normal runs are CI-sized. The soak test runs only with a duration:
//
//	go test ./internal/reliability -run TestSoak -soak=10m -v
package reliability
