package monitoring_test

import (
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/locktag/locktag/internal/integration/internal/apt"
)

// The shipped files, from this package's directory.
const (
	docsDir       = "../../../docs/"
	rulesFile     = docsDir + "monitoring/locktag-alerts.yml"
	rulesTestFile = docsDir + "monitoring/locktag-alerts.test.yml"
	dashboardFile = docsDir + "monitoring/locktag-dashboard.json"
	operationsDoc = docsDir + "operations.md"
)

// findPrometheus returns the paths of prometheus and promtool, installing
// Debian's prometheus package when they are missing (as `make deps`
// does); it skips the test only where they cannot be installed.
func findPrometheus(t *testing.T) (prometheus, promtool string) {
	t.Helper()
	look := func() bool {
		p1, err1 := exec.LookPath("prometheus")
		p2, err2 := exec.LookPath("promtool")
		prometheus, promtool = p1, p2
		return err1 == nil && err2 == nil
	}
	if look() {
		return
	}
	installOnce.Do(func() { installErr = installPrometheus() })
	if look() {
		return
	}
	t.Skipf("prometheus and promtool not found and could not be installed (%v): run `make deps` or apt-get install -y prometheus", installErr)
	return
}

var (
	installOnce sync.Once
	installErr  error
)

// installPrometheus installs Debian's prometheus (with promtool). The
// package's own service, where an init system starts it, is not used:
// the test starts its own process on a free port.
func installPrometheus() error { return apt.Install("--no-install-recommends", "prometheus") }

// version is the first line of `bin --version`.
func version(bin string) string {
	out, _ := exec.Command(bin, "--version").CombinedOutput()
	line, _, _ := strings.Cut(string(out), "\n")
	return line
}
