package monitoring_test

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// alertsBlock returns the rules file in docs/operations.md's "Alerts"
// section: its first yaml code block.
func alertsBlock(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(operationsDoc)
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## Alerts\n")
	if !ok {
		t.Fatal("docs/operations.md has no section ## Alerts")
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	_, blk, ok := strings.Cut(sec, "```yaml\n")
	if !ok {
		t.Fatal("docs/operations.md#alerts has no yaml block")
	}
	blk, _, ok = strings.Cut(blk, "```")
	if !ok {
		t.Fatal("docs/operations.md#alerts: unclosed yaml block")
	}
	return blk
}

// TestRulesMatchOperationsDoc: the shipped rules file is the rules of
// docs/operations.md#alerts, byte for byte after the file's header
// comment, so neither drifts from the other.
func TestRulesMatchOperationsDoc(t *testing.T) {
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	file := string(b)
	i := strings.Index(file, "\ngroups:\n")
	if i < 0 {
		t.Fatalf("%s: no top-level groups:", rulesFile)
	}
	header, body := file[:i+1], file[i+1:]
	for _, line := range strings.Split(strings.TrimSpace(header), "\n") {
		if !strings.HasPrefix(line, "#") {
			t.Errorf("%s: the header before groups: holds %q: only comments may stand there", rulesFile, line)
		}
	}
	doc := alertsBlock(t)
	if body == doc {
		return
	}
	fl, dl := strings.Split(body, "\n"), strings.Split(doc, "\n")
	for n := 0; n < max(len(fl), len(dl)); n++ {
		var f, d string
		if n < len(fl) {
			f = fl[n]
		}
		if n < len(dl) {
			d = dl[n]
		}
		if f != d {
			t.Fatalf("docs/monitoring/locktag-alerts.yml and the rules in docs/operations.md#alerts differ (change both), first at rule line %d:\n file: %q\n doc:  %q", n+1, f, d)
		}
	}
}

// TestRulesPromtool: promtool accepts the rules file, and its scenarios
// (locktag-alerts.test.yml: a healthy service, lost locks, a Redis outage,
// slow and stuck locks, with the rules' own `for:` durations) pass.
func TestRulesPromtool(t *testing.T) {
	_, promtool := findPrometheus(t)
	t.Logf("%s", version(promtool))
	for _, args := range [][]string{{"check", "rules", rulesFile}, {"test", "rules", rulesTestFile}} {
		out, err := exec.Command(promtool, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// Every alert of the rules file has a scenario in which it fires.
	rules, _ := os.ReadFile(rulesFile)
	tests, _ := os.ReadFile(rulesTestFile)
	for _, m := range regexp.MustCompile(`(?m)^\s*- alert: (\S+)`).FindAllStringSubmatch(string(rules), -1) {
		fires := regexp.MustCompile(`alertname: ` + m[1] + `\n\s+exp_alerts:`)
		if !fires.Match(tests) {
			t.Errorf("%s: no scenario in which %s fires", rulesTestFile, m[1])
		}
	}
}
