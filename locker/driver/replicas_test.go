package driver_test

import (
	"slices"
	"testing"

	"github.com/locktag/locktag/locker/driver"
)

// TestReplicaAddrs: the replicas of INFO replication's slaveN lines, in
// any state, by address (IPv6 in brackets); other lines and a replica's
// own master fields are not replicas.
func TestReplicaAddrs(t *testing.T) {
	for _, c := range []struct {
		name, info string
		want       []string
	}{
		{"master with replicas", "# Replication\r\nrole:master\r\nconnected_slaves:3\r\n" +
			"slave0:ip=127.0.0.1,port=6381,state=online,offset=42,lag=0\r\n" +
			"slave1:ip=127.0.0.1,port=6380,state=wait_bgsave,offset=0,lag=0\r\n" +
			"slave10:ip=::1,port=6390,state=online,offset=42,lag=1\r\n" +
			"master_failover_state:no-failover\r\nmaster_replid:abc\r\n",
			[]string{"127.0.0.1:6380", "127.0.0.1:6381", "[::1]:6390"}},
		{"no replicas", "# Replication\r\nrole:master\r\nconnected_slaves:0\r\n", nil},
		{"a replica", "# Replication\r\nrole:slave\r\nmaster_host:127.0.0.1\r\nmaster_port:6379\r\nslave_read_repl_offset:1\r\nslave_repl_offset:1\r\nslave_priority:100\r\nslave_read_only:1\r\nconnected_slaves:0\r\n", nil},
		{"a line cut short", "slave0:ip=127.0.0.1,state=online\r\n", nil},
	} {
		if got := driver.ReplicaAddrs(c.info); !slices.Equal(got, c.want) {
			t.Errorf("%s: ReplicaAddrs = %q, want %q", c.name, got, c.want)
		}
	}
}
