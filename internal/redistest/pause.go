package redistest

import "syscall"

// Pause stops the server process (SIGSTOP), as a frozen VM would: its
// sockets stay open and the kernel keeps accepting data for it. Resume
// continues it; Stop and Close work on a paused server.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP) }

// Resume continues a server stopped by Pause (SIGCONT).
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	if cmd == nil {
		s.errorf("redistest: %v to a server that is not running", sig)
		return
	}
	if err := cmd.Process.Signal(sig); err != nil {
		s.errorf("redistest: %v: %v", sig, err)
	}
}
