package redistest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// ServerEnv names the environment variable that picks the server program
// the tests start: a name looked up on PATH or a path, e.g.
// LOCKTAG_REDIS_SERVER=valkey-server. The default is redis-server.
const ServerEnv = "LOCKTAG_REDIS_SERVER"

// CLIEnv names the environment variable that picks the command-line client
// StartCluster runs (`--cluster create`). The default is the client beside
// the server: valkey-cli for valkey-server, redis-cli otherwise.
const CLIEnv = "LOCKTAG_REDIS_CLI"

// ServerBinary is the server program tests start (see ServerEnv).
func ServerBinary() string {
	if s := os.Getenv(ServerEnv); s != "" {
		return s
	}
	return "redis-server"
}

// CLIBinary is the command-line client StartCluster runs (see CLIEnv):
// for a server named <name>-server, <name>-cli in the same directory.
func CLIBinary() string {
	if c := os.Getenv(CLIEnv); c != "" {
		return c
	}
	srv := ServerBinary()
	dir, base := filepath.Split(srv)
	if name, ok := strings.CutSuffix(base, "-server"); ok {
		return dir + name + "-cli"
	}
	return "redis-cli"
}

var version struct {
	once sync.Once
	s    string
}

// ServerVersion is the first words of the server program's --version,
// e.g. "Redis server v=7.0.15" or "Valkey server v=8.0.1", for test logs;
// "" when it cannot be run.
func ServerVersion() string {
	version.once.Do(func() {
		out, err := exec.Command(ServerBinary(), "--version").Output()
		if err != nil {
			return
		}
		f := strings.Fields(string(out))
		if len(f) > 3 {
			f = f[:3]
		}
		version.s = strings.Join(f, " ")
	})
	return version.s
}

// installHint says how to get the server program.
func installHint() string {
	if strings.Contains(ServerBinary(), "valkey") {
		return "install it (Debian 12: apt-get install -t bookworm-backports valkey-server valkey-tools; see .ci/valkey.sh)"
	}
	return "install it (apt-get install -y redis-server) or run `make test`"
}
