// Command dashshot renders locktag's Grafana dashboard from a Prometheus
// server's data, without Grafana: it runs every panel's queries with
// query_range, draws the panels as a static HTML page (inline SVG) and,
// for a .png output, screenshots it with headless Chromium. From the
// repository root:
//
//	go run ./internal/integration/monitoring/dashshot -prometheus http://127.0.0.1:9090 -range 30m -o dashboard.png
//
// The image in docs/img is made by the monitoring test instead, from its
// own traffic (see docs/operations.md#dashboard-and-alerts).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/locktag/locktag/internal/integration/monitoring"
)

type vars map[string]string

func (v vars) String() string { return fmt.Sprint(map[string]string(v)) }
func (v vars) Set(s string) error {
	k, val, ok := strings.Cut(s, "=")
	if !ok {
		return fmt.Errorf("want name=value, got %q", s)
	}
	v[k] = val
	return nil
}

func main() {
	vs := vars{"instance": ".*", "lock": ".*"}
	var (
		prom     = flag.String("prometheus", "http://127.0.0.1:9090", "the Prometheus server's URL")
		dash     = flag.String("dashboard", "docs/monitoring/locktag-dashboard.json", "the dashboard JSON")
		rng      = flag.Duration("range", time.Hour, "the time range, ending at -end")
		end      = flag.String("end", "", "the range's end, RFC 3339 (default now)")
		rate     = flag.Duration("rate-interval", time.Minute, "the value of $__rate_interval")
		out      = flag.String("o", "dashboard.png", "the output: .png (needs chromium) or .html")
		chromium = flag.String("chromium", "", "the Chromium program (default: chromium on PATH)")
	)
	flag.Var(vs, "var", "a template variable's value, name=value (repeatable; default instance=.* lock=.*)")
	flag.Parse()
	if err := run(*prom, *dash, *rng, *end, *rate, *out, *chromium, vs); err != nil {
		fmt.Fprintln(os.Stderr, "dashshot:", err)
		os.Exit(1)
	}
}

func run(prom, dashPath string, rng time.Duration, endFlag string, rate time.Duration, out, chromium string, vs vars) error {
	d, err := monitoring.LoadDashboard(dashPath)
	if err != nil {
		return err
	}
	end := time.Now()
	if endFlag != "" {
		if end, err = time.Parse(time.RFC3339, endFlag); err != nil {
			return err
		}
	}
	step := max(rng/300, time.Second).Round(time.Second)
	r := monitoring.Range{Start: end.Add(-rng), End: end, Step: step, Vars: map[string]string{
		"__rate_interval": rate.String(), "__interval": step.String(), "__range": rng.String(),
	}}
	for k, v := range vs {
		r.Vars[k] = v
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	data := monitoring.Fetch(ctx, &monitoring.Client{URL: strings.TrimSuffix(prom, "/")}, d, r)
	for _, pd := range data {
		if pd.Err != nil {
			return pd.Err
		}
	}
	page := monitoring.HTML(d, data, r, fmt.Sprintf("%s, step %s, rate window %s", prom, step, rate))
	if strings.HasSuffix(out, ".html") {
		return os.WriteFile(out, page, 0o644)
	}
	if chromium == "" {
		if chromium = monitoring.FindChromium(); chromium == "" {
			return fmt.Errorf("no chromium on PATH (apt-get install chromium), or write -o page.html")
		}
	}
	f, err := os.CreateTemp("", "dashshot-*.html")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(page); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return monitoring.Screenshot(ctx, chromium, f.Name(), out, 1400, monitoring.PageHeight(d))
}
