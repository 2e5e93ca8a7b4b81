package ops_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/locktag/locktag/internal/lockertest"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/ops"
	"github.com/locktag/locktag/locker/redigo"
)

// TestRisks: what the start-up check accepted (an evicting policy under
// locker.WithEvictionAllowed) is in the list's JSON and on the page, with
// each master's settings; a Locker with nothing accepted shows none.
func TestRisks(t *testing.T) {
	srv := redistest.Start(t, redistest.WithArgs("--maxmemory", "1gb", "--maxmemory-policy", "allkeys-lru"))
	lk, err := locker.New(redigo.New(srv.Pool(t)), locker.WithEvictionAllowed(), locker.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Close()
	if err := lk.Check(t.Context()); err != nil {
		t.Fatal(err)
	}
	ts := serve(t, lk)
	get := func(path string) string {
		t.Helper()
		res, err := http.Get(ts.URL + "/debug/locktag/" + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return string(b)
	}
	var p ops.Page
	if err := json.Unmarshal([]byte(get("api/locks")), &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Risks) != 1 || !strings.Contains(p.Risks[0], "maxmemory-policy allkeys-lru") {
		t.Fatalf("risks in the list: %q", p.Risks)
	}
	if page := get(""); !strings.Contains(page, `class="risk"`) || !strings.Contains(page, "maxmemory-policy allkeys-lru") {
		t.Fatalf("the page does not show the risk:\n%s", page)
	}
	// The master's settings, read with the page.
	if len(p.Servers) != 1 || p.Servers[0].Policy != "allkeys-lru" || !p.Servers[0].Evicting || p.Servers[0].MaxMemory != 1<<30 || p.Servers[0].AOF {
		t.Fatalf("servers in the list: %+v", p.Servers)
	}
	if page := get(""); !strings.Contains(page, "Redis master 0: maxmemory-policy allkeys-lru (maxmemory 1073741824 bytes), may evict a held lock; evicted keys 0; appendonly off") {
		t.Fatalf("the page does not show the master's settings:\n%s", page)
	}

	plain, _ := newLocker(t)
	if err := plain.Check(t.Context()); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(serveGet(t, plain), `class="risk"`) {
		t.Fatal("a Locker with nothing accepted shows a risk")
	}
}

// serveGet returns lk's ops page.
func serveGet(t *testing.T, lk *locker.Locker) string {
	t.Helper()
	res, err := http.Get(serve(t, lk).URL + "/debug/locktag/")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return string(b)
}

// TestServersReplica: a replica the Locker's driver lists
// (driver.Replicas; here a real one, redis-server --replicaof) is in the
// list's servers after the master, marked as a replica with its address,
// and the page names it so.
func TestServersReplica(t *testing.T) {
	master := redistest.Start(t)
	host, port, _ := strings.Cut(master.Addr(), ":")
	replica := redistest.Start(t, redistest.WithArgs("--replicaof", host, port, "--maxmemory", "1gb", "--maxmemory-policy", "allkeys-lru"))
	pool := replica.Pool(t)
	d := lockertest.WithReplicas(redigo.New(master.Pool(t)), func() []driver.Replica {
		return []driver.Replica{{Addr: replica.Addr(), Driver: redigo.New(pool)}}
	})
	lk, err := locker.New(d, locker.WithEvictionAllowed(), locker.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Close()
	res, err := http.Get(serve(t, lk).URL + "/debug/locktag/api/locks")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var p ops.Page
	if err := json.NewDecoder(res.Body).Decode(&p); err != nil {
		t.Fatal(err)
	}
	if len(p.Servers) != 2 || p.Servers[0].Replica || !p.Servers[1].Replica || p.Servers[1].Addr != replica.Addr() || !p.Servers[1].Evicting {
		t.Fatalf("servers in the list: %+v, want the master, then the evicting replica", p.Servers)
	}
	want := "Redis replica " + replica.Addr() + ": maxmemory-policy allkeys-lru (maxmemory 1073741824 bytes), may evict a held lock"
	if page := serveGet(t, lk); !strings.Contains(page, "Redis master 0: maxmemory-policy noeviction") || !strings.Contains(page, want) {
		t.Fatalf("the page does not show the master and the replica:\n%s", page)
	}
}
