package preflight

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/internal/backend"
	"github.com/locktag/locktag/locker/internal/callctx"
	"github.com/locktag/locktag/locker/internal/lockerr"
	"github.com/locktag/locktag/locker/internal/protocol"
	"github.com/locktag/locktag/locker/redigo"
)

// TestCheckFindsOldServer: check.lua names a server older than Redis 7.0
// (the version its redis table or INFO reports; Redis 6 is simulated by
// the script's own local, the table being read-only) and checkReply reads
// it apart from the denied and unknown commands; this server passes.
func TestCheckFindsOldServer(t *testing.T) {
	srv := redistest.Start(t)
	const line = "local version = redis.REDIS_VERSION\n"
	if !strings.Contains(protocol.CheckSource, line) {
		t.Fatalf("check.lua does not read the version as %q", line)
	}
	run := func(src string) (denied, unknown []string, old string) {
		t.Helper()
		s := driver.NewScript(src)
		v, err := srv.Do("EVAL", s.Source(), 0, "locktag:{check}", "", "", "GET", "NOSUCHCOMMAND")
		if err != nil {
			t.Fatalf("EVAL: %v", err)
		}
		f, err := checkReply(toStrings(v))
		if err != nil {
			t.Fatal(err)
		}
		return f.denied, f.unknown, f.old
	}
	if denied, unknown, old := run(protocol.CheckSource); old != "" || len(denied) != 0 || !slices.Equal(unknown, []string{"NOSUCHCOMMAND"}) {
		t.Errorf("this server: denied %q, unknown %q, old %q", denied, unknown, old)
	}
	if _, _, old := run(strings.Replace(protocol.CheckSource, line, "local version = '6.2.14'\n", 1)); old != "6.2.14" {
		t.Errorf("Redis 6.2.14 reported as %q, want refused", old)
	}
	if _, _, old := run(strings.Replace(protocol.CheckSource, line, "local version = nil\n", 1)); old != "" {
		t.Errorf("Redis 7 read from INFO reported as %q, want passed", old)
	}
}

// toStrings turns the reply's bulk strings into strings, as the drivers do.
func toStrings(v any) any {
	a, ok := v.([]any)
	if !ok {
		return v
	}
	out := make([]any, len(a))
	for i, x := range a {
		if b, ok := x.([]byte); ok {
			x = string(b)
		}
		out[i] = x
	}
	return out
}

// TestPingChecksUntilPassed: Ping runs Check on a node until it passed
// once (Node.Capable), and only the trivial script after that: a server
// Check refuses fails Ping until it is fixed, and a later change is not
// seen by Ping (Check still sees it).
func TestPingChecksUntilPassed(t *testing.T) {
	srv := redistest.Start(t)
	sh := backend.NewShared(backend.Config{Prefix: "t:", Bounds: callctx.Bounds{Timeout: 2 * time.Second}}, 250*time.Millisecond, false, backend.Hooks{})
	nd := backend.New(redigo.New(srv.Pool(t)), sh)
	t.Cleanup(func() { _ = nd.Close() })
	ctx := t.Context()
	evict := func(policy string) {
		t.Helper()
		for _, kv := range [][2]string{{"maxmemory", "100mb"}, {"maxmemory-policy", policy}} {
			if _, err := srv.Do("CONFIG", "SET", kv[0], kv[1]); err != nil {
				t.Fatal(err)
			}
		}
	}
	evict("allkeys-lru")
	if err := Ping(ctx, nd); !errors.Is(err, lockerr.ErrEvictionPolicy) || nd.Capable.Load() {
		t.Fatalf("Ping on an evicting server: %v (capable %v), want ErrEvictionPolicy from Check", err, nd.Capable.Load())
	}
	evict("noeviction")
	if err := Ping(ctx, nd); err != nil || !nd.Capable.Load() {
		t.Fatalf("Ping once the policy is fixed: %v (capable %v), want nil and capable", err, nd.Capable.Load())
	}
	evict("allkeys-lru")
	if err := Ping(ctx, nd); err != nil {
		t.Errorf("Ping after Check passed: %v, want nil (the trivial script only)", err)
	}
	if err := Check(ctx, nd); !errors.Is(err, lockerr.ErrEvictionPolicy) {
		t.Errorf("Check on an evicting server: %v, want ErrEvictionPolicy", err)
	}
}
