package redistest

import "testing"

func TestCLIBinary(t *testing.T) {
	for _, c := range []struct{ server, cli, want string }{
		{"", "", "redis-cli"},
		{"valkey-server", "", "valkey-cli"},
		{"/opt/valkey/bin/valkey-server", "", "/opt/valkey/bin/valkey-cli"},
		{"/usr/local/bin/redis-server", "", "/usr/local/bin/redis-cli"},
		{"my-build", "", "redis-cli"},
		{"valkey-server", "/x/cli", "/x/cli"},
	} {
		t.Setenv(ServerEnv, c.server)
		t.Setenv(CLIEnv, c.cli)
		if got := CLIBinary(); got != c.want {
			t.Errorf("server %q, cli %q: CLIBinary() = %q, want %q", c.server, c.cli, got, c.want)
		}
	}
	t.Setenv(ServerEnv, "")
	if ServerBinary() != "redis-server" {
		t.Errorf("default ServerBinary() = %q", ServerBinary())
	}
}
