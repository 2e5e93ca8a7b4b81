//go:build !race

package goredis_test

// raceEnabled: see race_on_test.go.
const raceEnabled = false
