package locktest

import (
	"fmt"
	"sync"
)

// Standalone is a T outside a test, for a Kit shared by a package's tests
// (made in TestMain) and for Examples: Fatalf and Skipf panic with the
// message, Errorf records it (Err), and Close runs the clean-ups, the
// Kit's included, last registered first. The zero value is ready to use.
type Standalone struct {
	mu       sync.Mutex
	cleanups []func()
	errs     []string
}

// Helper does nothing: there is no test to report lines of.
func (*Standalone) Helper() {}

// Cleanup registers f for Close.
func (s *Standalone) Cleanup(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cleanups = append(s.cleanups, f)
}

// Errorf records a failure; Err returns it.
func (s *Standalone) Errorf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs = append(s.errs, fmt.Sprintf(format, args...))
}

// Fatalf panics with the message.
func (*Standalone) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

// Skipf panics with the message: outside a test there is nothing to skip.
func (*Standalone) Skipf(format string, args ...any) {
	panic("skipped: " + fmt.Sprintf(format, args...))
}

// Err returns the failures Errorf recorded, joined, or nil.
func (s *Standalone) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.errs) == 0 {
		return nil
	}
	return fmt.Errorf("locktest: %d failures: %q", len(s.errs), s.errs)
}

// Close runs the registered clean-ups, last first; it stops the Kits made
// with s.
func (s *Standalone) Close() {
	for {
		s.mu.Lock()
		n := len(s.cleanups)
		if n == 0 {
			s.mu.Unlock()
			return
		}
		f := s.cleanups[n-1]
		s.cleanups = s.cleanups[:n-1]
		s.mu.Unlock()
		f()
	}
}
