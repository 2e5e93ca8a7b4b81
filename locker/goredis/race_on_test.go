//go:build race

package goredis_test

// raceEnabled: the race detector changes allocation counts (sync.Pool
// drops items at random, checks allocate), so allocation budgets are
// checked without it.
const raceEnabled = true
