package monitoring_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
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

// installPrometheus runs apt-get, through sudo when not root. The
// package's own service, where an init system starts it, is not used:
// the test starts its own process on a free port.
func installPrometheus() error {
	if _, err := exec.LookPath("apt-get"); err != nil {
		return errors.New("no apt-get on this machine")
	}
	var prefix []string
	if os.Geteuid() != 0 {
		if _, err := exec.LookPath("sudo"); err != nil {
			return errors.New("not root and no sudo")
		}
		prefix = []string{"sudo", "-n"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for _, args := range [][]string{{"apt-get", "update", "-qq"}, {"apt-get", "install", "-y", "-qq", "--no-install-recommends", "prometheus"}} {
		argv := append(append([]string(nil), prefix...), args...)
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			s := strings.TrimSpace(string(out))
			return fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, s[strings.LastIndexByte(s, '\n')+1:])
		}
	}
	return nil
}

// version is the first line of `bin --version`.
func version(bin string) string {
	out, _ := exec.Command(bin, "--version").CombinedOutput()
	line, _, _ := strings.Cut(string(out), "\n")
	return line
}
