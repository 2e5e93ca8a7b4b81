package locktest

import "errors"

// ErrNoServer means New could not start the server the Kit runs on: the
// redis-server program is not on PATH, or did not start. New skips the
// test with an error matching it.
var ErrNoServer = errors.New("locktest: no server")
