package driver

import (
	"net"
	"slices"
	"strings"
)

// ReplicaAddrs returns the host:port of each replica a master's INFO
// replication lists ("slaveN:ip=…,port=…,state=…"), sorted: for a
// [Replicas] driver on a master it reaches directly (Sentinel, or one
// server with replicas). Every replica listed counts, online or still
// syncing: either may be promoted later.
func ReplicaAddrs(info string) []string {
	var addrs []string
	for line := range strings.Lines(info) {
		name, fields, ok := strings.Cut(strings.TrimSpace(line), ":")
		n, slave := strings.CutPrefix(name, "slave")
		if !ok || !slave || n == "" || strings.Trim(n, "0123456789") != "" {
			continue
		}
		var ip, port string
		for f := range strings.SplitSeq(fields, ",") {
			switch k, v, _ := strings.Cut(f, "="); k {
			case "ip":
				ip = v
			case "port":
				port = v
			}
		}
		if ip != "" && port != "" {
			addrs = append(addrs, net.JoinHostPort(ip, port))
		}
	}
	slices.Sort(addrs)
	return addrs
}
