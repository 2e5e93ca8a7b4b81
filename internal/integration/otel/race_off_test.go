//go:build !race

package otel_test

// raceEnabled: see race_on_test.go.
const raceEnabled = false
