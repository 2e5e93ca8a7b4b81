//go:build !race

package lockotel_test

// raceEnabled: see race_on_test.go.
const raceEnabled = false
