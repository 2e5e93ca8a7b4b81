package monitoring_test

import (
	"context"
	"flag"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/integration/monitoring"
)

var screenshot = flag.String("screenshot", "", "also write a PNG of the dashboard rendered from the test's data to this `file` (needs chromium), e.g. $PWD/docs/img/locktag-dashboard.png")

// shortFor is the `for:` of every rule in the copy of the rules file the
// live Prometheus loads. THE TEST SHORTENS THE RULES' `for:` DURATIONS
// (2m, 5m, 10m) to this so that their scenarios fit in seconds; the
// expressions are the shipped ones. The durations themselves are checked
// in simulated time by promtool (TestRulesPromtool).
const shortFor = "2s"

// shortenedRules writes the rules file with every `for:` set to shortFor.
func shortenedRules(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^(\s+)for: \S+$`)
	if n := len(re.FindAll(b, -1)); n < 4 {
		t.Fatalf("%s: %d rules with for:, want at least 4", rulesFile, n)
	}
	out := filepath.Join(t.TempDir(), "locktag-alerts-short-for.yml")
	if err := os.WriteFile(out, re.ReplaceAll(b, []byte("${1}for: "+shortFor)), 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDashboardAndAlertsOnPrometheus scrapes the shop under real traffic
// with a real Prometheus (1s scrape and evaluation interval) that loads
// the shipped rules, with `for:` shortened (shortFor):
//
//  1. healthy traffic: every rule evaluates without error, none is
//     pending or firing;
//  2. a lock lost (its key deleted under a running job), the process's
//     first: LocktagLockLost fires, the Redis alerts do not; a second
//     loss, whose refused renewal is an increase: LocktagRenewalsFailing
//     fires too;
//  3. Redis down with traffic and a held lock: LocktagRedisUnavailable and
//     LocktagIdempotencyStoreUnavailable fire, and renewals fail (the
//     other half of LocktagRenewalsFailing);
//  4. after Redis is back, every query of every dashboard panel returns
//     data over the run, with the series each panel is for.
func TestDashboardAndAlertsOnPrometheus(t *testing.T) {
	promBin, _ := findPrometheus(t)
	t.Logf("%s", version(promBin))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	d, err := monitoring.LoadDashboard(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}

	s := startShop(t)
	target, err := url.Parse(s.metrics.URL)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := monitoring.StartServer(ctx, monitoring.ServerConfig{
		Binary: promBin, Dir: t.TempDir(), Targets: []string{target.Host},
		Interval: time.Second, RuleFiles: []string{shortenedRules(t)},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ps.Stop()
		if t.Failed() {
			t.Logf("prometheus log:\n%s", ps.LogTail())
		}
	})
	t.Logf("prometheus pid %d on %s, scraping %s", ps.Pid(), ps.URL, target.Host)

	from := time.Now()
	tr := s.drive()
	stopped := false
	stopTraffic := func() {
		if !stopped {
			stopped = true
			tr.stop()
			t.Log(tr.summary())
		}
	}
	defer stopTraffic()

	has := func(expr string) bool {
		ss, err := ps.Query(ctx, expr, time.Now())
		if err != nil {
			t.Fatalf("query %s: %v", expr, err)
		}
		return len(ss) > 0
	}
	within(t, 30*time.Second, "prometheus scraping the shop", func() bool { return has(`up{job="locktag"} == 1`) })
	within(t, 30*time.Second, "a rate over the shop's lock traffic",
		func() bool { return has(`sum(rate(locktag_lock_outcomes_total{locktag_outcome="acquired"}[4s])) > 0`) })

	// 1. Healthy: every rule evaluated, without error; nothing pending or
	// firing, also shortFor later (long enough for one to fire).
	within(t, 30*time.Second, "every rule evaluated", func() bool {
		rules, err := ps.Rules(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ok := 0
		for _, r := range rules {
			if r.Health == "err" {
				t.Fatalf("rule %s: %s", r.Name, r.LastError)
			}
			if r.Health == "ok" {
				ok++
			}
		}
		return len(rules) >= 8 && ok == len(rules)
	})
	for range 2 {
		if a := alerts(t, ctx, ps); len(a) > 0 {
			t.Fatalf("healthy traffic: alerts %v", a)
		}
		time.Sleep(3 * time.Second) // let a `for:` of 2s run out
	}
	t.Log("healthy: no alert pending or firing")
	linger(20 * time.Second)

	// 2. A lock lost: a job holds its lock (watchdog) and its key is
	// deleted, as an eviction or a stray DEL would; the next renewal is
	// refused and the job's context cancelled.
	lostDone := s.startJob(t, ctx, "lost-1")
	if n, err := s.redis.Do("DEL", "locktag:{job:lost-1}"); err != nil || n != int64(1) {
		t.Fatalf("DEL locktag:{job:lost-1}: %v %v (the key layout changed?)", n, err)
	}
	if code := recvWithin(t, lostDone, 10*time.Second, "the lost job's answer"); code != 503 {
		t.Fatalf("lost job answered %d, want 503", code)
	}
	// The process's first loss: the series starts at 1.
	fired := waitFiring(t, ctx, ps, "lock lost", map[string]string{"LocktagLockLost": jobRoute})
	for _, name := range []string{"LocktagRedisUnavailable", "LocktagIdempotencyStoreUnavailable"} {
		if _, ok := fired[name]; ok {
			t.Errorf("lock lost: %s fired", name)
		}
	}
	// A second loss, which counters that exist already count as an
	// increase (the dashboard's rate of refused renewals shows it).
	lostDone = s.startJob(t, ctx, "lost-2")
	if n, err := s.redis.Do("DEL", "locktag:{job:lost-2}"); err != nil || n != int64(1) {
		t.Fatalf("DEL locktag:{job:lost-2}: %v %v", n, err)
	}
	if code := recvWithin(t, lostDone, 10*time.Second, "the second lost job's answer"); code != 503 {
		t.Fatalf("second lost job answered %d, want 503", code)
	}
	// Its refused renewal is an increase too: renewals failing ("refused").
	fired = waitFiring(t, ctx, ps, "second lock lost", map[string]string{"LocktagLockLost": jobRoute, "LocktagRenewalsFailing": jobRoute})
	for _, name := range []string{"LocktagRedisUnavailable", "LocktagIdempotencyStoreUnavailable"} {
		if _, ok := fired[name]; ok {
			t.Errorf("lock lost: %s fired", name)
		}
	}

	linger(10 * time.Second)

	// 3. Redis down while a job holds its lock and traffic goes on.
	outageDone := s.startJob(t, ctx, "outage-1")
	s.redis.Stop()
	down := time.Now()
	waitFiring(t, ctx, ps, "redis down", map[string]string{
		"LocktagRedisUnavailable":            payRoute,
		"LocktagIdempotencyStoreUnavailable": payments,
	})
	t.Logf("redis down: alerts fired within %v", time.Since(down).Round(100*time.Millisecond))
	// LocktagRenewalsFailing fired already for the refused renewal: it is
	// the outage's too when its other half, failed renewals, is above zero.
	if !has(`sum by (locktag_lock_name) (rate(locktag_lock_renewals_total{locktag_renewal_result="error", locktag_lock_name="` + jobRoute + `"}[5m])) > 0`) {
		t.Error("redis down: no failed renewals for LocktagRenewalsFailing")
	}
	_ = recvWithin(t, outageDone, 10*time.Second, "the outage job's answer")
	linger(10 * time.Second)
	s.redis.Restart()
	restarted := time.Now()
	within(t, 30*time.Second, "lock traffic after the restart", func() bool {
		return has(`sum(increase(locktag_lock_outcomes_total{locktag_outcome="acquired"}[3s])) > 0`) &&
			time.Since(restarted) > 3*time.Second
	})
	within(t, 10*time.Second, "a scrape after the restart", func() bool { return time.Since(restarted) > 5*time.Second })
	linger(25 * time.Second)
	end := time.Now()
	stopTraffic()

	// 4. Every panel over the run.
	r := monitoring.Range{Start: from, End: end, Step: time.Second, Vars: map[string]string{
		"instance": ".*", "lock": ".*", "datasource": "prometheus",
		// Grafana's values for a 1s scrape interval at this range.
		"__rate_interval": "4s", "__interval": "1s",
		"__range": fmt.Sprintf("%ds", int(end.Sub(from).Seconds())+60),
	}}
	data := monitoring.Fetch(ctx, &ps.Client, d, r)
	checkPanels(t, data)
	page := monitoring.HTML(d, data, r, "test traffic")
	htmlPath := filepath.Join(t.TempDir(), "dashboard.html")
	if err := os.WriteFile(htmlPath, page, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range d.Panels {
		if !strings.Contains(string(page), ">"+htmlEscape(p.Title)+"</h2>") {
			t.Errorf("rendered page lacks panel %q", p.Title)
		}
	}
	if strings.Contains(string(page), `class="err"`) {
		t.Errorf("rendered page shows a panel without data")
	}
	if *screenshot != "" {
		writeScreenshot(t, ctx, ps, d, from, end)
	}
}

// linger lets a phase of the run go on for d when the run makes the
// screenshot, so that each shows in the picture; otherwise it returns.
func linger(d time.Duration) {
	if *screenshot != "" {
		time.Sleep(d) // pacing the picture's story, not synchronising
	}
}

// writeScreenshot renders the dashboard for docs/img with a smoother
// rate window than the checks use, and screenshots it.
func writeScreenshot(t *testing.T, ctx context.Context, ps *monitoring.Server, d *monitoring.Dashboard, from, end time.Time) {
	chromium := monitoring.FindChromium()
	if chromium == "" {
		t.Fatal("-screenshot: no chromium on PATH")
	}
	r := monitoring.Range{Start: from, End: end, Step: time.Second, Vars: map[string]string{
		"instance": ".*", "lock": ".*", "__rate_interval": "8s", "__interval": "1s",
		"__range": fmt.Sprintf("%ds", int(end.Sub(from).Seconds())+60),
	}}
	data := monitoring.Fetch(ctx, &ps.Client, d, r)
	page := monitoring.HTML(d, data, r, "the monitoring test's traffic: a lock lost, then Redis down · rate window 8s")
	htmlPath := filepath.Join(t.TempDir(), "dashboard.html")
	if err := os.WriteFile(htmlPath, page, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := monitoring.Screenshot(ctx, chromium, htmlPath, *screenshot, 1400, monitoring.PageHeight(d)); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", *screenshot)
}

// expectedSeries are series some panels must show with a value above
// zero at some time of the run: what each panel is for.
var expectedSeries = map[string][]string{
	"Lock outcomes / s":           {"acquired", "busy", "lost", "error"},
	"Watchdog renewals / s":       {"ok", "refused", "error"},
	"Idempotency outcomes / s":    {"executed", "replayed", "conflict", "mismatch", "error"},
	"Rate decisions / s":          {"admitted " + payRoute, "rate_limited " + payRoute},
	"Queue and holders":           {"waiting " + report, "held " + report, "held " + payRoute, "held " + jobRoute},
	"Hand-overs and give-ups / s": {"waits ended " + payRoute, "waits ended " + report, "busy or canceled " + shipRoute},
	"Locks lost by lock":          {jobRoute},
	"Redis as locks see it":       {"lock " + payRoute, "idempotency " + payments, "renewal " + jobRoute},
}

// checkPanels fails unless every query of every panel returned a series,
// every panel has a value above zero, and the expected series are there.
func checkPanels(t *testing.T, data []monitoring.PanelData) {
	t.Helper()
	for _, pd := range data {
		if pd.Err != nil {
			t.Errorf("%v", pd.Err)
			continue
		}
		refs := map[string]bool{}
		positive := map[string]bool{}
		for _, s := range pd.Series {
			refs[s.RefID] = true
			for _, smp := range s.Samples {
				if smp.V > 0 && !math.IsInf(smp.V, 0) {
					positive[s.Name] = true
				}
			}
		}
		for _, tg := range pd.Panel.Targets {
			if !refs[tg.RefID] {
				t.Errorf("panel %q: query %s returned no data: %s", pd.Panel.Title, tg.RefID, tg.Expr)
			}
		}
		if len(positive) == 0 {
			t.Errorf("panel %q: no value above zero over the run", pd.Panel.Title)
		}
		for _, want := range expectedSeries[pd.Panel.Title] {
			if !positive[want] {
				t.Errorf("panel %q: no series %q above zero; it has %v", pd.Panel.Title, want, sortedKeys(positive))
			}
		}
	}
	for title := range expectedSeries {
		found := false
		for _, pd := range data {
			found = found || pd.Panel.Title == title
		}
		if !found {
			t.Errorf("the dashboard has no panel %q", title)
		}
	}
}

// startJob starts a job that holds its lock for up to a minute and
// returns once its handler holds it; the channel gets its answer.
func (s *shop) startJob(t *testing.T, ctx context.Context, id string) <-chan int {
	t.Helper()
	done := make(chan int, 1)
	go func() { done <- s.post(ctx, "/jobs/"+id+"/run?hold=1m", "ops", "", "") }()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case got := <-s.holding:
			if got == id {
				return done
			}
		case code := <-done:
			t.Fatalf("job %s answered %d before holding its lock", id, code)
		case <-deadline:
			t.Fatalf("job %s did not get its lock", id)
		}
	}
}

// alerts lists the pending and firing alerts as "name{lock} state".
func alerts(t *testing.T, ctx context.Context, ps *monitoring.Server) []string {
	t.Helper()
	as, err := ps.Alerts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range as {
		out = append(out, fmt.Sprintf("%s{%s} %s", a.Labels["alertname"], a.Labels["locktag_lock_name"], a.State))
	}
	sort.Strings(out)
	return out
}

// waitFiring waits until each alert of want fires for the lock name it
// maps to, and returns every firing alert with its lock names.
func waitFiring(t *testing.T, ctx context.Context, ps *monitoring.Server, scenario string, want map[string]string) map[string][]string {
	t.Helper()
	start := time.Now()
	var firing map[string][]string
	within(t, 45*time.Second, scenario+": alerts "+fmt.Sprint(want)+" firing", func() bool {
		as, err := ps.Alerts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		firing = map[string][]string{}
		for _, a := range as {
			if a.State == "firing" {
				firing[a.Labels["alertname"]] = append(firing[a.Labels["alertname"]], a.Labels["locktag_lock_name"])
			}
		}
		for name, lock := range want {
			found := false
			for _, l := range firing[name] {
				found = found || l == lock
			}
			if !found {
				return false
			}
		}
		return true
	})
	var list []string
	for name, locks := range firing {
		sort.Strings(locks)
		list = append(list, fmt.Sprintf("%s%q", name, locks))
	}
	sort.Strings(list)
	t.Logf("%s: firing after %v: %s", scenario, time.Since(start).Round(100*time.Millisecond), strings.Join(list, ", "))
	return firing
}

// within polls cond (a Prometheus query, mostly) until it holds.
func within(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", d, what)
		}
		time.Sleep(250 * time.Millisecond) // polling Prometheus, whose state moves once a second
	}
}

func recvWithin[T any](t *testing.T, ch <-chan T, d time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(d):
		t.Fatalf("not within %v: %s", d, what)
		var zero T
		return zero
	}
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;").Replace(s)
}
