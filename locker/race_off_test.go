//go:build !race

package locker_test

// raceEnabled: see race_on_test.go.
const raceEnabled = false
