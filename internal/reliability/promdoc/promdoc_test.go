package promdoc

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/lockotel"
	"github.com/locktag/locktag/locker/redigo"
)

// scrape returns every sample line's metric name with its label names.
func scrape(t *testing.T, h http.Handler) map[string]map[string]bool {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("scrape: %d", rec.Code)
	}
	if os.Getenv("PROMDOC_DUMP") != "" {
		t.Log(rec.Body.String())
	}
	series := map[string]map[string]bool{}
	// Label values may hold braces ({id} in a route): match quoted strings whole.
	sample := regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{((?:[^"}]|"(?:[^"\\]|\\.)*")*)\})? `)
	label := regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="`)
	sc := bufio.NewScanner(rec.Body)
	for sc.Scan() {
		m := sample.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		if series[m[1]] == nil {
			series[m[1]] = map[string]bool{}
		}
		for _, l := range label.FindAllStringSubmatch(m[3], -1) {
			series[m[1]][l[1]] = true
		}
	}
	return series
}

// traffic makes every metric the docs query record something: acquired,
// busy, waited, renewed, lost, held now and waiting now, an idempotency
// check.
func traffic(t *testing.T, srv *redistest.Server, lk *locker.Locker) (stop func()) {
	t.Helper()
	ctx := context.Background()
	p := locker.Params{Name: "POST /orders/{id}/pay", Template: "order:{path.id}"}
	held, err := lk.Obtain(ctx, "order:1", p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lk.Obtain(ctx, "order:1", p); !errors.Is(err, locker.ErrNotObtained) {
		t.Fatalf("busy: %v", err)
	}
	waiting := p
	waiting.Wait = 30 * time.Second
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = lk.Obtain(wctx, "order:1", waiting) // waits until cancelled
	}()
	// An idempotency check, for locktag_idempotency_outcomes_total.
	claim, err := lk.Idempotent(ctx, locker.IdempotencyName("POST /payments", "alice", "k1"), "fp", locker.IdempotencyParams{Name: "POST /payments"})
	if err != nil {
		t.Fatal(err)
	}
	if err := claim.Complete(ctx, []byte("201")); err != nil {
		t.Fatal(err)
	}
	lost, err := lk.Obtain(ctx, "order:2", p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Do("DEL", "locktag:{order:2}"); err != nil {
		t.Fatal(err)
	}
	select { // lost at its next renewal, which counts a refused renewal
	case <-lost.Context().Done():
	case <-time.After(10 * time.Second):
		t.Fatal("order:2 not lost")
	}
	return func() {
		cancel()
		<-done
		_ = held.Release(ctx)
	}
}

func TestObservabilityQueriesMatchTheExporter(t *testing.T) {
	srv := redistest.Start(t)
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	lk, err := locker.New(redigo.New(srv.Pool(t)), locker.WithObserver(lockotel.New(lockotel.WithMeterProvider(mp))),
		locker.WithWatchdog(400*time.Millisecond, 50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk.Close() })
	stop := traffic(t, srv, lk)
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()

	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	// The waiter is counted once it queued: poll the scrape (deadline).
	var series map[string]map[string]bool
	deadline := time.Now().Add(10 * time.Second)
	for {
		series = scrape(t, h)
		if _, ok := series["locktag_lock_waiters"]; ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no locktag_lock_waiters series")
		}
		time.Sleep(10 * time.Millisecond) // poll interval
	}
	// The wait histogram records when a wait ends: end it, scrape again.
	stop()
	stopped = true
	for name, labels := range scrape(t, h) {
		if series[name] == nil {
			series[name] = labels
		}
		for l := range labels {
			series[name][l] = true
		}
	}

	var queries []map[string]map[string]bool
	for _, page := range docPages {
		qs := docQueries(t, "../../../docs/"+page)
		if len(qs) == 0 {
			t.Fatalf("docs/%s has no PromQL", page)
		}
		queries = append(queries, qs...)
		for _, q := range rangeless(t, "../../../docs/"+page) {
			t.Errorf("docs/%s query %q: rate/increase without a [range]", page, q)
		}
	}
	if n := len(alertRules(t, "../../../docs/operations.md")); n < 6 {
		t.Errorf("docs/operations.md has %d alerting rules, want at least 6", n)
	}
	labelNames := map[string]bool{}
	for _, ls := range series {
		for l := range ls {
			labelNames[l] = true
		}
	}
	for _, q := range queries {
		for name, labels := range q {
			got, ok := series[name]
			if !ok {
				if len(labels) == 0 && labelNames[name] {
					continue // a label named in prose, e.g. `locktag_lock_name`
				}
				t.Errorf("docs query metric %s: not exported; exported: %v", name, names(series))
				continue
			}
			for l := range labels {
				if !got[l] {
					t.Errorf("docs query %s{%s=…}: no such label; it has %v", name, l, keys(got))
				}
			}
		}
	}
}

// docPages are the pages whose PromQL is checked: observability.md's
// queries and operations.md's alerting rules.
var docPages = []string{"observability.md", "operations.md"}

// fence matches a fenced code block; its body is group 1.
var fence = regexp.MustCompile("(?ms)^\\s*```[a-z]*\\n(.*?)^\\s*```")

// alertRules returns the expressions of the alerting rules in the page's
// fenced blocks (Prometheus rule files: one `- alert:` item per rule,
// its `expr:` below it).
func alertRules(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, blk := range fence.FindAllStringSubmatch(string(b), -1) {
		for _, rule := range strings.Split(blk[1], "- alert:")[1:] {
			if _, expr, ok := strings.Cut(rule, "expr:"); ok {
				expr, _, _ = strings.Cut(expr, "labels:")
				expr, _, _ = strings.Cut(expr, "for:")
				out = append(out, expr)
			}
		}
	}
	return out
}

// docQueries returns, for each inline code span in the page that holds
// PromQL (names locktag_…) and each alerting rule's expression in its
// fenced blocks, the metric names it uses with the label names in their
// selectors.
func docQueries(t *testing.T, path string) []map[string]map[string]bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	texts := alertRules(t, path)
	code := regexp.MustCompile("`([^`]*locktag_[^`]*)`")
	for _, c := range code.FindAllStringSubmatch(fence.ReplaceAllString(string(b), ""), -1) {
		texts = append(texts, c[1])
	}
	metric := regexp.MustCompile(`(locktag_[a-z0-9_]+)(\{([^}]*)\})?`)
	label := regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!=|!~|=)`)
	// Grouping and matching label lists: by (...), and the on (...) of a
	// binary operation, whose labels both sides must have.
	by := regexp.MustCompile(`\b(?:by|on|ignoring|without)\s*\(([^)]*)\)`)
	var out []map[string]map[string]bool
	for _, src := range texts {
		q := map[string]map[string]bool{}
		var grouped []string
		text := by.ReplaceAllStringFunc(src, func(g string) string {
			for _, l := range strings.Split(by.FindStringSubmatch(g)[1], ",") {
				if l = strings.TrimSpace(l); l != "" && l != "le" {
					grouped = append(grouped, l)
				}
			}
			return ""
		})
		for _, m := range metric.FindAllStringSubmatch(text, -1) {
			if q[m[1]] == nil {
				q[m[1]] = map[string]bool{}
			}
			for _, l := range label.FindAllStringSubmatch(m[3], -1) {
				q[m[1]][l[1]] = true
			}
		}
		for _, l := range grouped { // by/on (...) labels apply to every metric in the query
			for name := range q {
				q[name][l] = true
			}
		}
		out = append(out, q)
	}
	return out
}

func names(m map[string]map[string]bool) []string {
	var out []string
	for k := range m {
		if strings.HasPrefix(k, "locktag_") {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// rangeless returns the page's rate( and increase( calls whose argument has
// no range selector, which Prometheus rejects.
func rangeless(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	call := regexp.MustCompile(`\b(rate|irate|increase)\(([^()]*(\([^()]*\))?[^()]*)\)`)
	var out []string
	for _, m := range call.FindAllStringSubmatch(string(b), -1) {
		if !regexp.MustCompile(`\[[0-9]+[smhdwy]\]`).MatchString(m[2]) {
			out = append(out, m[0])
		}
	}
	return out
}
