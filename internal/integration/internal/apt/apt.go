// Package apt installs Debian packages a test needs (a browser, a
// Prometheus) the way the project's set-up does: apt-get update, then
// apt-get install, through sudo when not root.
package apt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Install runs apt-get update and apt-get install -y args (packages, and
// flags such as --no-install-recommends), for up to ten minutes. Its error
// names the command and the last line apt-get printed.
func Install(args ...string) error {
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
	for _, step := range [][]string{{"apt-get", "update", "-qq"}, append([]string{"apt-get", "install", "-y", "-qq"}, args...)} {
		argv := append(append([]string(nil), prefix...), step...)
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			s := strings.TrimSpace(string(out))
			return fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, s[strings.LastIndexByte(s, '\n')+1:])
		}
	}
	return nil
}
