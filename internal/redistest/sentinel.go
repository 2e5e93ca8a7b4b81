package redistest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

// SentinelMaster is the master name the sentinels of StartSentinel monitor.
const SentinelMaster = "locktag"

// Sentinels is a local Sentinel set-up: a master, its replicas and three
// sentinels (quorum 2) on loopback ports, with down-after-milliseconds
// 1000 so a dead master is noticed within seconds.
type Sentinels struct {
	// Data are the master as started and its replicas; which of them is
	// the master changes with failovers (see Master).
	Data []*Server
	// Sentinels are the three sentinel processes.
	Sentinels []*Server
}

// StartSentinel starts a master with replicas replicas and three
// sentinels monitoring it as SentinelMaster, and waits until every
// sentinel knows the replicas and the other sentinels. Everything is
// stopped when the test ends.
func StartSentinel(t testing.TB, replicas int) *Sentinels {
	t.Helper()
	// No delay before a (diskless) full sync, 5s by default: a replica
	// is ready as soon as it connects, after start-up and after a
	// failover.
	fast := WithArgs("--repl-diskless-sync-delay", "0")
	master := Start(t, fast)
	s := &Sentinels{Data: []*Server{master}}
	for range replicas {
		host, port, _ := splitAddr(master.Addr())
		s.Data = append(s.Data, Start(t, fast, WithArgs("--replicaof", host, port)))
	}
	errs := make([]error, 3)
	dirs := make([]string, 3)
	s.Sentinels = make([]*Server, 3)
	var wg sync.WaitGroup
	for i := range s.Sentinels {
		wg.Go(func() { s.Sentinels[i], dirs[i], errs[i] = launchSentinel(master.Addr()) })
	}
	wg.Wait()
	for i, sn := range s.Sentinels {
		if dirs[i] != "" {
			t.Cleanup(func() { _ = os.RemoveAll(dirs[i]) })
		}
		if sn != nil {
			sn.t = t
			t.Cleanup(sn.Close)
		}
	}
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	s.waitSettled(t, 30*time.Second)
	return s
}

func splitAddr(addr string) (host, port string, err error) {
	for i := len(addr) - 1; i >= 0; i-- {
		if addr[i] == ':' {
			return addr[:i], addr[i+1:], nil
		}
	}
	return "", "", fmt.Errorf("redistest: bad address %q", addr)
}

// launchSentinel starts one sentinel with a config file of its own (a
// sentinel rewrites it) in dir, which the caller removes.
func launchSentinel(masterAddr string) (_ *Server, dir string, _ error) {
	host, port, err := splitAddr(masterAddr)
	if err != nil {
		return nil, "", err
	}
	dir, err = os.MkdirTemp("", "redistest-sentinel-")
	if err != nil {
		return nil, "", err
	}
	conf := filepath.Join(dir, "sentinel.conf")
	body := fmt.Sprintf(`sentinel monitor %[1]s %[2]s %[3]s 2
sentinel down-after-milliseconds %[1]s 1000
sentinel failover-timeout %[1]s 10000
sentinel parallel-syncs %[1]s 1
`, SentinelMaster, host, port)
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		return nil, dir, err
	}
	s, err := Launch(WithConfigFile(conf), WithArgs("--sentinel"))
	return s, dir, err
}

// Addrs are the sentinels' host:port, for go-redis FailoverOptions'
// SentinelAddrs.
func (s *Sentinels) Addrs() []string {
	out := make([]string, len(s.Sentinels))
	for i, sn := range s.Sentinels {
		out[i] = sn.Addr()
	}
	return out
}

// MasterAddr is the master's address as the first running sentinel
// reports it (SENTINEL GET-MASTER-ADDR-BY-NAME).
func (s *Sentinels) MasterAddr(t testing.TB) string {
	t.Helper()
	for _, sn := range s.Sentinels {
		if !sn.Running() {
			continue
		}
		v, err := redis.Strings(sn.Do("SENTINEL", "GET-MASTER-ADDR-BY-NAME", SentinelMaster))
		if err != nil || len(v) != 2 {
			t.Fatalf("redistest: SENTINEL GET-MASTER-ADDR-BY-NAME: %v %v", v, err)
		}
		return v[0] + ":" + v[1]
	}
	t.Fatal("redistest: no sentinel is running")
	return ""
}

// Master is the data server the sentinels report as master.
func (s *Sentinels) Master(t testing.TB) *Server {
	t.Helper()
	addr := s.MasterAddr(t)
	for _, d := range s.Data {
		if d.Addr() == addr {
			return d
		}
	}
	t.Fatalf("redistest: sentinels report unknown master %s", addr)
	return nil
}

// Failover asks a sentinel for a failover (SENTINEL FAILOVER, no agreement
// needed) and waits until every sentinel reports a new master that
// answers as master and whose replicas are reconfigured. It returns the
// new master.
func (s *Sentinels) Failover(t testing.TB, within time.Duration) *Server {
	t.Helper()
	old := s.Master(t)
	if _, err := s.Sentinels[0].Do("SENTINEL", "FAILOVER", SentinelMaster); err != nil {
		t.Fatalf("redistest: SENTINEL FAILOVER: %v", err)
	}
	return s.WaitNewMaster(t, old, within)
}

// KillMaster stops the master process (SIGKILL), as a crash would, and
// returns it; the sentinels fail over after down-after-milliseconds. Wait
// for that with WaitNewMaster; restart the old master with Restart (the
// sentinels then turn it into a replica).
func (s *Sentinels) KillMaster(t testing.TB) *Server {
	t.Helper()
	m := s.Master(t)
	m.Stop()
	return m
}

// WaitNewMaster waits until every running sentinel reports a master other
// than old, that server answers ROLE as master, and the sentinels know
// it. It returns the new master.
func (s *Sentinels) WaitNewMaster(t testing.TB, old *Server, within time.Duration) *Server {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		m, err := s.newMaster(old)
		if err == nil {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("redistest: no new master within %v: %v", within, err)
		}
		time.Sleep(20 * time.Millisecond) // polling servers, not synchronising goroutines
	}
}

func (s *Sentinels) newMaster(old *Server) (*Server, error) {
	addr := ""
	for _, sn := range s.Sentinels {
		if !sn.Running() {
			continue
		}
		v, err := redis.Strings(sn.Do("SENTINEL", "GET-MASTER-ADDR-BY-NAME", SentinelMaster))
		if err != nil || len(v) != 2 {
			return nil, fmt.Errorf("sentinel %s: %v %v", sn.Addr(), v, err)
		}
		a := v[0] + ":" + v[1]
		switch {
		case a == old.Addr():
			return nil, fmt.Errorf("sentinel %s still reports %s", sn.Addr(), a)
		case addr != "" && a != addr:
			return nil, fmt.Errorf("sentinels disagree: %s, %s", addr, a)
		}
		addr = a
	}
	for _, d := range s.Data {
		if d.Addr() != addr {
			continue
		}
		role, err := redis.Values(d.Do("ROLE"))
		if err != nil || len(role) == 0 {
			return nil, fmt.Errorf("ROLE on %s: %v", addr, err)
		}
		if r, _ := redis.String(role[0], nil); r != "master" {
			return nil, fmt.Errorf("%s is %s, not master yet", addr, r)
		}
		return d, nil
	}
	return nil, fmt.Errorf("sentinels report unknown master %s", addr)
}

// WaitReplicated waits until every replica of the current master has
// processed everything the master had written when it was called: each
// replica's slave_repl_offset reaches the master's master_repl_offset.
//
// WAIT through Server.Do would not do: WAIT waits for the writes of its
// own connection, and Do dials a fresh one that wrote nothing, so it
// returns at once whatever the replicas have — on a loaded machine before
// a write made a moment earlier has reached them.
func (s *Sentinels) WaitReplicated(t testing.TB, within time.Duration) {
	t.Helper()
	m := s.Master(t)
	info, err := redis.String(m.Do("INFO", "replication"))
	if err != nil {
		t.Fatalf("redistest: INFO replication on the master: %v", err)
	}
	want, err := strconv.ParseInt(infoFields(info)["master_repl_offset"], 10, 64)
	if err != nil {
		t.Fatalf("redistest: master_repl_offset: %v", err)
	}
	deadline := time.Now().Add(within)
	for _, d := range s.Data {
		if d == m || !d.Running() {
			continue
		}
		for {
			info, err := redis.String(d.Do("INFO", "replication"))
			got, perr := strconv.ParseInt(infoFields(info)["slave_repl_offset"], 10, 64)
			if err == nil && perr == nil && got >= want {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("redistest: replica %s not at the master's offset %d within %v: %d (%v)", d.Addr(), want, within, got, errors.Join(err, perr))
			}
			time.Sleep(10 * time.Millisecond) // polling a server, not synchronising goroutines
		}
	}
}

// waitSettled waits until every sentinel sees the replicas of the master and
// the two other sentinels, so a failover can be agreed on.
func (s *Sentinels) waitSettled(t testing.TB, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		err := s.settled()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("redistest: sentinels not settled within %v: %v", within, err)
		}
		time.Sleep(20 * time.Millisecond) // polling servers, not synchronising goroutines
	}
}

func (s *Sentinels) settled() error {
	for _, sn := range s.Sentinels {
		v, err := redis.StringMap(sn.Do("SENTINEL", "MASTER", SentinelMaster))
		if err != nil {
			return fmt.Errorf("sentinel %s: %w", sn.Addr(), err)
		}
		if v["num-slaves"] != strconv.Itoa(len(s.Data)-1) || v["num-other-sentinels"] != strconv.Itoa(len(s.Sentinels)-1) {
			return fmt.Errorf("sentinel %s: %s replicas, %s other sentinels", sn.Addr(), v["num-slaves"], v["num-other-sentinels"])
		}
	}
	// The replicas must be in sync, or the sentinels refuse to promote them.
	for _, d := range s.Data[1:] {
		info, err := redis.String(d.Do("INFO", "replication"))
		if err != nil {
			return err
		}
		if infoFields(info)["master_link_status"] != "up" {
			return fmt.Errorf("replica %s: link to master not up", d.Addr())
		}
	}
	// And online on the master's side (which after a diskless sync
	// waits for the replica's first acknowledgement): WAIT counts only
	// those.
	info, err := redis.String(s.Data[0].Do("INFO", "replication"))
	if err != nil {
		return err
	}
	if n := strings.Count(info, "state=online"); n != len(s.Data)-1 {
		return fmt.Errorf("master: %d of %d replicas online", n, len(s.Data)-1)
	}
	return nil
}
