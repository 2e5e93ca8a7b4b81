package locker

import (
	"errors"
	"sync"
)

// ErrStaleToken is returned by Fence.Admit for a fencing token that is not
// larger than one the fence already admitted: the writer lost its lock.
var ErrStaleToken = errors.New("locker: stale fencing token")

// Fence is the protected side of fencing, kept in memory: it admits a write
// for a resource only if its token is larger than every token admitted for
// that resource before. Use it for storage that lives in one process (or as
// the model of the check in a database). In SQL the same check is one
// conditional write:
//
//	UPDATE stock SET qty = $1, fence = $2 WHERE sku = $3 AND fence < $2
//
// and zero rows updated means the token was stale. The zero Fence is ready to
// use and safe for concurrent use.
type Fence struct {
	mu   sync.Mutex
	last map[string]int64
}

// Admit records token for resource, or returns ErrStaleToken when a token at
// least as large was admitted before. Nested holds share their root's token,
// so a holder may write more than once: Admit accepts a token equal to the
// last one only through AdmitAgain.
func (f *Fence) Admit(resource string, token int64) error {
	return f.admit(resource, token, false)
}

// AdmitAgain is Admit that also accepts the last admitted token, for a
// holder that writes the same resource several times under one lock.
func (f *Fence) AdmitAgain(resource string, token int64) error {
	return f.admit(resource, token, true)
}

func (f *Fence) admit(resource string, token int64, again bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	last, seen := f.last[resource]
	if seen && (token < last || token == last && !again) {
		return ErrStaleToken
	}
	if f.last == nil {
		f.last = make(map[string]int64)
	}
	f.last[resource] = token
	return nil
}
