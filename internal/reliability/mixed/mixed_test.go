package mixed

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/internal/redistest"
)

// The workers' binaries, built by .ci/mixed.sh: the previous release's
// (LOCKTAG_MIXED_OLD), HEAD's (LOCKTAG_MIXED_NEW) and a release known not
// to interoperate with HEAD (LOCKTAG_MIXED_CONTROL).
var (
	oldWorker     = os.Getenv("LOCKTAG_MIXED_OLD")
	newWorker     = os.Getenv("LOCKTAG_MIXED_NEW")
	controlWorker = os.Getenv("LOCKTAG_MIXED_CONTROL")
)

// run is how long each kind runs, and how many goroutines each process.
const (
	run        = 3 * time.Second
	goroutines = 6
	rateLimit  = 500 // admissions per second of the rate kind
)

// result is a worker's JSON line.
type result struct {
	ID         string `json:"id"`
	Ops        int64  `json:"ops"`
	Busy       int64  `json:"busy"`
	Overlaps   int64  `json:"overlaps"`
	Stale      int64  `json:"stale"`
	Errors     int64  `json:"errors"`
	FirstError string `json:"first_error"`
}

// target is where the workers run: det is the server of the detector's
// keys (hash tag {occ}); cluster, when set, the Cluster's addresses the
// locker runs on (else det alone).
type target struct {
	det     *redistest.Server
	cluster string
}

// workers runs one process of each binary in bins, all from one start to
// one end on tg, and returns their results.
func workers(t *testing.T, tg target, kind string, bins []string) []result {
	t.Helper()
	start := time.Now().Add(1500 * time.Millisecond) // every process is up by then
	until := start.Add(run)
	out := make([]result, len(bins))
	errs := make([]error, len(bins))
	var wg sync.WaitGroup
	for i, bin := range bins {
		wg.Go(func() {
			id := fmt.Sprintf("%s#%d", label(bin), i)
			args := []string{"-addr", tg.det.Addr(), "-kind", kind, "-id", id, "-g", strconv.Itoa(goroutines),
				"-start", strconv.FormatInt(start.UnixMilli(), 10), "-until", strconv.FormatInt(until.UnixMilli(), 10),
				"-rate", strconv.Itoa(rateLimit)}
			if tg.cluster != "" {
				args = append(args, "-cluster", tg.cluster)
			}
			cmd := exec.Command(bin, args...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				errs[i] = fmt.Errorf("%s: %v: %s", id, err, stderr.String())
				return
			}
			if err := json.Unmarshal(stdout.Bytes(), &out[i]); err != nil {
				errs[i] = fmt.Errorf("%s: %v: %q", id, err, stdout.String())
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// label names a worker binary by its role.
func label(bin string) string {
	switch bin {
	case oldWorker:
		return "previous"
	case newWorker:
		return "head"
	case controlWorker:
		return "control"
	}
	return bin
}

// problems runs kind with two processes of a and two of b on a fresh
// Redis and returns what went wrong: overlaps, errors, a starved process,
// a duplicate execution, a rate off by more than 1 % from want (rate
// kind; 0: not checked). It also returns the admissions (rate kind).
func problems(t *testing.T, kind, a, b string, want int64) ([]string, int64) {
	t.Helper()
	srv := redistest.Start(t)
	defer srv.Close()
	return check(t, target{det: srv}, kind, a, b, want)
}

// check runs kind on tg as problems does, and checks the results.
func check(t *testing.T, tg target, kind, a, b string, want int64) ([]string, int64) {
	t.Helper()
	srv := tg.det
	res := workers(t, tg, kind, []string{a, b, a, b})
	var out []string
	var total int64
	for _, r := range res {
		total += r.Ops
	}
	fair := total / int64(len(res))
	for _, r := range res {
		if r.Overlaps > 0 {
			out = append(out, fmt.Sprintf("%s: %d overlapping critical sections", r.ID, r.Overlaps))
		}
		if r.Stale > 0 {
			out = append(out, fmt.Sprintf("%s: %d fencing tokens not above every earlier one", r.ID, r.Stale))
		}
		if r.Errors > 0 {
			out = append(out, fmt.Sprintf("%s: %d errors (first: %s)", r.ID, r.Errors, r.FirstError))
		}
		// Starved: under a tenth of a fair share (the rate kind shares
		// one bucket, and idempotency a fixed set of requests: neither
		// promises shares).
		if kind != "rate" && kind != "idem" && kind != "httpidem" && r.Ops*10 < fair {
			out = append(out, fmt.Sprintf("%s: starved, %d critical sections of %d", r.ID, r.Ops, total))
		}
	}
	if kind == "idem" || kind == "httpidem" {
		c := srv.Pool(t).Get()
		defer c.Close()
		keys, err := redis.Strings(c.Do("KEYS", "{occ}:exec:*"))
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) == 0 {
			out = append(out, "no idempotent request executed")
		}
		for _, k := range keys {
			if n, _ := redis.Int(c.Do("GET", k)); n != 1 {
				out = append(out, fmt.Sprintf("request %s executed %d times", strings.TrimPrefix(k, "{occ}:exec:"), n))
			}
		}
	}
	if kind == "rate" && want > 0 {
		if d := math.Abs(float64(total-want)) / float64(want); d > 0.01 {
			out = append(out, fmt.Sprintf("rate: %d admissions, %d in a single-version run (%.1f %% off)", total, want, 100*d))
		}
	}
	return out, total
}

var kinds = []string{"mutex", "job", "sem", "rw", "multi", "idem", "httpidem", "rate"}

func need(t *testing.T, bins ...string) {
	for _, b := range bins {
		if b == "" {
			t.Skip("the mixed-version stage builds the workers: bash .ci/mixed.sh")
		}
	}
}

// TestMixedVersions: workers of the previous release and of HEAD share one
// Redis, kind by kind, with 0 overlaps, 0 errors, 0 duplicate executions,
// fencing tokens that only grow, no process starved, and a rate within
// 1 % of HEAD's alone. The mutex kind also keeps every eighth lock a
// moment after its release (keep); the job kind runs locker/job's jobs.
func TestMixedVersions(t *testing.T) {
	need(t, oldWorker, newWorker)
	var rate int64
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			if kind == "rate" {
				_, rate = problems(t, kind, newWorker, newWorker, 0)
				t.Logf("rate: %d admissions in a HEAD-only run", rate)
			}
			ps, total := problems(t, kind, oldWorker, newWorker, rate)
			for _, p := range ps {
				t.Error(p)
			}
			t.Logf("%s: previous release and HEAD: %d critical sections (or admissions), %d problems", kind, total, len(ps))
		})
	}
}

// TestMixedCluster: the same on a Redis Cluster of three masters, the
// locker on go-redis's cluster client (multi-key locks span slots there,
// so they go key by key).
func TestMixedCluster(t *testing.T) {
	need(t, oldWorker, newWorker)
	c := redistest.StartCluster(t, 3, 0)
	tg := target{det: c.MasterOf(t, c.KeySlot(t, "{occ}")), cluster: strings.Join(c.Addrs(), ",")}
	flush := func() {
		for _, m := range c.Masters(t) {
			if _, err := m.Do("FLUSHALL"); err != nil {
				t.Fatal(err)
			}
		}
	}
	var rate int64
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			if kind == "rate" {
				flush()
				_, rate = check(t, tg, kind, newWorker, newWorker, 0)
				t.Logf("cluster, rate: %d admissions in a HEAD-only run", rate)
			}
			flush()
			ps, total := check(t, tg, kind, oldWorker, newWorker, rate)
			for _, p := range ps {
				t.Error(p)
			}
			t.Logf("cluster, %s: previous release and HEAD: %d critical sections (or admissions), %d problems", kind, total, len(ps))
		})
	}
}

// TestMixedControl: a pair known not to interoperate (v0.10.0 and HEAD:
// their waiter queues differ) must fail the same checks, or they prove
// nothing; and the occupancy detector must see the overlaps of workers
// that take no lock.
func TestMixedControl(t *testing.T) {
	need(t, controlWorker, newWorker)
	ps, _ := problems(t, "nolock", newWorker, newWorker, 0)
	if !strings.Contains(strings.Join(ps, "\n"), "overlapping") {
		t.Fatalf("workers without a lock showed no overlap: the detector cannot tell (%v)", ps)
	}
	t.Logf("the occupancy detector sees workers without a lock overlap, as it must: %s", ps[0])
	var found []string
	for _, kind := range []string{"mutex", "rw"} {
		ps, _ := problems(t, kind, controlWorker, newWorker, 0)
		for _, p := range ps {
			found = append(found, kind+": "+p)
		}
	}
	if len(found) == 0 {
		t.Fatal("the control pair (v0.10.0 with HEAD) passed the checks: the mixed-version test cannot tell an incompatible pair")
	}
	t.Logf("the control pair (v0.10.0 with HEAD) fails the checks, as it must (%d problems), e.g. %s", len(found), found[0])
}
