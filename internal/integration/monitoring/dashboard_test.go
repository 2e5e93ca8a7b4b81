package monitoring_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/locktag/locktag/internal/integration/monitoring"
)

// gridVars are values for every template variable the dashboard may use.
var gridVars = map[string]string{
	"instance": ".*", "lock": ".*", "datasource": "prometheus",
	"__rate_interval": "1m", "__interval": "15s", "__range": "1h",
}

// TestDashboardJSON checks the dashboard's shape without Prometheus: its
// variables, that panels fit Grafana's 24-column grid without overlapping,
// that every query takes its data source from the $datasource variable and
// uses only variables the dashboard defines, and that every metric
// docs/observability.md lists is on a panel.
func TestDashboardJSON(t *testing.T) {
	d, err := monitoring.LoadDashboard(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	if d.UID == "" || d.Title == "" {
		t.Errorf("dashboard uid %q, title %q: both needed for import and provisioning", d.UID, d.Title)
	}
	defined := map[string]bool{"__rate_interval": true, "__interval": true, "__range": true}
	for _, v := range d.Templating.List {
		defined[v.Name] = true
		if v.Type == "datasource" && v.Query != "prometheus" {
			t.Errorf("variable %s: a %v data source, want prometheus", v.Name, v.Query)
		}
		if v.IncludeAll && v.AllValue != ".*" {
			t.Errorf("variable %s: allValue %q: the queries match with =~, so All must be .*", v.Name, v.AllValue)
		}
	}
	for _, name := range []string{"datasource", "instance", "lock"} {
		if !defined[name] {
			t.Errorf("no template variable %s", name)
		}
	}
	for name := range gridVars {
		if !defined[name] {
			t.Errorf("the tests set $%s, which the dashboard does not define", name)
		}
	}

	var cells [24][200]int // panel id per grid cell
	ids, titles := map[int]bool{}, map[string]bool{}
	var exprs strings.Builder
	for _, p := range d.Panels {
		if ids[p.ID] || titles[p.Title] {
			t.Errorf("panel %d %q: id or title used twice", p.ID, p.Title)
		}
		ids[p.ID], titles[p.Title] = true, true
		g := p.GridPos
		if g.W <= 0 || g.H <= 0 || g.X < 0 || g.Y < 0 || g.X+g.W > 24 || g.Y+g.H > len(cells[0]) {
			t.Errorf("panel %q: gridPos %+v off the 24-column grid", p.Title, g)
			continue
		}
		for x := g.X; x < g.X+g.W; x++ {
			for y := g.Y; y < g.Y+g.H; y++ {
				if other := cells[x][y]; other != 0 {
					t.Errorf("panel %q overlaps panel %d at column %d, row %d", p.Title, other, x, y)
				}
				cells[x][y] = p.ID
			}
		}
		if p.Description == "" {
			t.Errorf("panel %q: no description (what it shows, shown on hover)", p.Title)
		}
		if p.Type != "stat" && p.Type != "timeseries" {
			t.Errorf("panel %q: type %q", p.Title, p.Type)
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q: data source %+v, want uid ${datasource}", p.Title, p.Datasource)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q: no query", p.Title)
		}
		for _, tg := range p.Targets {
			if tg.Datasource == nil || tg.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q query %s: data source %+v, want uid ${datasource}", p.Title, tg.RefID, tg.Datasource)
			}
			if _, err := monitoring.Expand(tg.Expr, gridVars); err != nil {
				t.Errorf("panel %q query %s: %v", p.Title, tg.RefID, err)
			}
			if p.Type == "timeseries" && tg.LegendFormat == "" {
				t.Errorf("panel %q query %s: no legend format", p.Title, tg.RefID)
			}
			// The Redis servers' metrics (locktag_redis_*) are per server,
			// not per lock: they take $instance only.
			perLock := !strings.Contains(tg.Expr, "locktag_redis_")
			if !strings.Contains(tg.Expr, `instance=~"$instance"`) || perLock && !strings.Contains(tg.Expr, `locktag_lock_name=~"$lock"`) {
				t.Errorf("panel %q query %s: every selector must take $instance and (but the Redis servers') $lock: %s", p.Title, tg.RefID, tg.Expr)
			}
			exprs.WriteString(tg.Expr + "\n")
		}
	}
	for _, m := range observabilityMetrics(t) {
		if !strings.Contains(exprs.String(), m) {
			t.Errorf("docs/observability.md lists %s; no panel shows it", m)
		}
	}
}

// observabilityMetrics returns the Prometheus names of the metrics in
// docs/observability.md's table: dots to underscores, _seconds for
// seconds, _total for counters.
func observabilityMetrics(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(docsDir + "observability.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `(locktag\\.[a-z.]+)` \\| ([a-z -]+) \\| ([^ |]+) \\|")
	var out []string
	for _, m := range row.FindAllStringSubmatch(string(b), -1) {
		name := strings.ReplaceAll(m[1], ".", "_")
		if m[3] == "s" {
			name += "_seconds"
		}
		if m[2] == "counter" {
			name += "_total"
		}
		out = append(out, name)
	}
	if len(out) < 8 {
		t.Fatalf("docs/observability.md: %d metrics in its table (%v), want 8 or more", len(out), out)
	}
	return out
}
