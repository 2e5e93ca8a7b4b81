package protocol

// The mutex's scripts by their short names, as this package's tests run
// them.
var (
	Acquire = Mutex.Acquire.Script
	Release = Mutex.Release.Script
	Leave   = Mutex.Leave.Script
	Extend  = Mutex.Extend.Script
	PTTL    = Mutex.PTTL.Script
	Keep    = Mutex.Keep.Script
)
