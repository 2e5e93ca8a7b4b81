package redistest

import (
	"os"
	"strings"
	"testing"
)

// TestStartOnTakenPort: a server started on a port another server already
// holds fails to start, though the port answers PING (the other server
// does): two servers of one test never share a port.
func TestStartOnTakenPort(t *testing.T) {
	first := Start(t)
	dir := t.TempDir()
	second := &Server{dir: dir, port: first.port}
	err := second.start()
	if err == nil {
		second.Close()
		t.Fatal("a second server started on a taken port")
	}
	if !strings.Contains(err.Error(), "answered by process") && !strings.Contains(err.Error(), "exited early") {
		t.Errorf("error %q, want it to say the port is another process's", err)
	}
	if first.ping() != nil {
		t.Error("the first server stopped answering")
	}
	_ = os.RemoveAll(dir)
}
