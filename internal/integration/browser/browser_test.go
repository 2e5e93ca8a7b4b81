package browser_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/locktag/locktag/internal/logtest"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/ops"
	"github.com/locktag/locktag/middleware/stdhttp"

	"github.com/locktag/locktag/internal/integration/internal/apt"
)

// screenshotEnv, set to 1, makes TestBrowser save the page it drove to
// docs/img/ops-page.png (the picture in docs/operations.md).
const screenshotEnv = "LOCKTAG_UPDATE_SCREENSHOT"

// The page in a real browser, in a 1280x900 window: a net/http route holds
// a lock while its request runs; the page lists it with its holder and a
// moving lease countdown, and another lock with its waiter; the page fits
// the window (no horizontal scrolling; the release button inside the
// viewport); an operator types a reason and clicks force-release; the lock
// is freed, the holder's request ends with 503 (lock lost, nothing
// written), and the release is audited.
func TestBrowser(t *testing.T) {
	browser := findBrowser(t)
	lk, _ := newLocker(t)
	var logs logtest.Buffer
	mux := http.NewServeMux()
	started := make(chan struct{}, 1)
	lost := make(chan error, 1)
	job := stdhttp.MustLock(lk, `key:"job:{path.id}"`)
	if err := job.Handle(mux, "GET /jobs/{id}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-r.Context().Done() // a stuck job: runs until its lock is lost
		lost <- context.Cause(r.Context())
	})); err != nil {
		t.Fatal(err)
	}
	opsPage, err := ops.NewHandler(lk,
		ops.WithAuthorizer(allowAll),
		ops.WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))),
		ops.WithIdentity(func(r *http.Request) string { return "operator@" + r.RemoteAddr }),
		ops.WithRefresh(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle("/debug/locktag/", opsPage)
	redact := ops.HashNames([]byte("the browser test secret"))
	readOnly, err := ops.NewHandler(lk, ops.WithRedaction(redact))
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle("/readonly/", readOnly)
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)

	// The stuck request, holding job:7.
	status := make(chan int, 1)
	reqCtx, endRequest := context.WithCancel(context.Background())
	t.Cleanup(endRequest) // before ts.Close, which waits for it, if the test failed
	go func() {
		req, _ := http.NewRequestWithContext(reqCtx, http.MethodGet, ts.URL+"/jobs/7", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			status <- -1
			return
		}
		resp.Body.Close()
		status <- resp.StatusCode
	}()
	testwait.Recv(t, started, "the job's handler to start")
	st, err := lk.Inspect(t.Context(), "job:7")
	if err != nil || st.Holder == nil {
		t.Fatalf("job:7 not held: %+v %v", st, err)
	}
	holder := *st.Holder
	// Another lock, so the page (and its screenshot) show more than one
	// row: a semaphore with two labelled holders and a waiter.
	for _, who := range []string{"reports@host-2 pid 77; nightly", "reports@host-5 pid 12; backfill"} {
		le, err := lk.Obtain(t.Context(), "report:daily", locker.Params{TTL: time.Minute, Limit: 2, Label: who})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = le.Release(context.Background()) })
	}
	waiter, stopWaiter := context.WithCancel(t.Context())
	t.Cleanup(stopWaiter)
	go func() {
		if le, err := lk.Obtain(waiter, "report:daily", locker.Params{Wait: time.Minute, Limit: 2, Label: "reports@host-9 pid 3; retry"}); err == nil {
			_ = le.Release(context.Background())
		}
	}()
	eventually(t, "a waiter queued on report:daily", func() bool {
		st, err := lk.Inspect(t.Context(), "report:daily")
		return err == nil && st.Queued == 1
	})

	ctx := newBrowser(t, browser)
	run := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, 2*testwait.Timeout)
		defer cancel()
		if err := chromedp.Do(sctx, steps...); err != nil {
			t.Fatalf("browser: %s: %v", what, err)
		}
	}
	// read evaluates expr on the first element matching sel (e), in one
	// step, waiting for the element: the page swaps its rows on every
	// refresh, so a node found by one call may be gone by the next.
	read := func(sel, expr string) string {
		t.Helper()
		js := fmt.Sprintf(`(function () { var e = document.querySelector(%q); return e ? String(%s) : null; })()`, sel, expr)
		var got *string
		testwait.Eventually(t, "an element "+sel, func() bool {
			sctx, cancel := context.WithTimeout(ctx, 2*testwait.Timeout)
			defer cancel()
			v, err := chromedp.Run(sctx, chromedp.Evaluate[*string](js))
			if err != nil {
				t.Fatalf("browser: %s of %s: %v", expr, sel, err)
			}
			got = v
			return got != nil
		})
		return strings.TrimSpace(*got)
	}
	text := func(sel string) string { t.Helper(); return read(sel, "e.innerText") }
	row := `tr.lock[data-name="job:7"]`
	run("open the page",
		chromedp.EmulateViewport(1280, 900),
		chromedp.Navigate(ts.URL+"/debug/locktag/"),
		chromedp.WaitVisible(chromedp.CSS(row)))

	// The holder: its fencing token and owner token.
	if got, want := text(row+" .fence"), fmt.Sprintf("fence %d", holder.Fence); got != want {
		t.Fatalf("fence shown %q, want %q", got, want)
	}
	if owner := read(row+" .holder .owner", "e.title"); !strings.Contains(owner, holder.Owner) {
		t.Fatalf("owner token shown %q, want %q", owner, holder.Owner)
	}
	if got := text(row + " .label"); got != holder.Label || !strings.Contains(got, "GET /jobs/{id}") {
		t.Fatalf("label shown %q, want %q (the guard's: the route)", got, holder.Label)
	}
	if got := text(row + " .kind"); got != "mutex" {
		t.Fatalf("kind shown %q", got)
	}
	sem := `tr.lock[data-name="report:daily"]`
	if got := text(sem + " .queued"); got != "1 queued" {
		t.Fatalf("report:daily waiters shown %q", got)
	}
	// The waiter itself, listed in the row: its label, owner token and
	// how long it has waited and will wait.
	if got := text(sem + " li.waiter"); !strings.Contains(got, "reports@host-9 pid 3; retry") ||
		!strings.Contains(got, "waited") || !strings.Contains(got, "gives up in") {
		t.Fatalf("report:daily waiter shown %q", got)
	}
	waiterOwner := read(sem+" li.waiter .owner", "e.title")
	if st, err := lk.Inspect(t.Context(), "report:daily"); err != nil || len(st.Waiters) != 1 || waiterOwner != "owner token "+st.Waiters[0].Owner {
		t.Fatalf("waiter's owner token shown %q, want %+v (%v)", waiterOwner, st, err)
	}

	// It fits 1280 px: nothing wider than the window, and every release
	// button wholly inside the viewport, without scrolling sideways.
	sctx, cancel := context.WithTimeout(ctx, 2*testwait.Timeout)
	fit, err := chromedp.Run(sctx, chromedp.Evaluate[string](`(function () {
		var d = document.documentElement, out = [];
		if (d.scrollWidth > d.clientWidth) { out.push("page " + d.scrollWidth + "px wide in " + d.clientWidth); }
		var m = document.querySelector("main");
		if (m.scrollWidth > m.clientWidth) { out.push("table " + m.scrollWidth + "px wide in " + m.clientWidth); }
		document.querySelectorAll("button.release-button").forEach(function (b) {
			var r = b.getBoundingClientRect();
			if (r.width === 0 || r.left < 0 || r.right > window.innerWidth || r.top < 0 || r.bottom > window.innerHeight) {
				out.push("button at " + r.left + ".." + r.right + " x " + r.top + ".." + r.bottom + " in " + window.innerWidth + "x" + window.innerHeight);
			}
		});
		if (document.querySelectorAll("button.release-button").length !== 2) { out.push("want 2 release buttons"); }
		return out.join("; ");
	})()`))
	cancel()
	if err != nil || fit != "" {
		t.Fatalf("the page does not fit 1280x900: %s (%v)", fit, err)
	}
	if got := text(sem + " .kind"); got != "semaphore (limit 2)" {
		t.Fatalf("report:daily kind shown %q", got)
	}
	sctx, cancel = context.WithTimeout(ctx, 2*testwait.Timeout)
	n, err := chromedp.Run(sctx, chromedp.Evaluate[int](`document.querySelectorAll('tr.lock[data-name="report:daily"] .holder').length`))
	cancel()
	if err != nil || n != 2 {
		t.Fatalf("report:daily holders shown: %d (%v)", n, err)
	}

	// The countdown moves: read it, then poll until it shows less.
	first := text(row + " .lease")
	var firstLeft time.Duration
	if firstLeft, err = time.ParseDuration(first); err != nil || firstLeft <= 0 {
		t.Fatalf("lease shown %q: %v", first, err)
	}
	eventually(t, "the lease countdown to move from "+first, func() bool {
		now, err := time.ParseDuration(text(row + " .lease"))
		return err == nil && now != firstLeft
	})

	// Force-release with a reason typed in the row's form.
	run("type a reason", chromedp.SendKeys(chromedp.CSS(row+" input.reason"), "stuck job, test"))
	if os.Getenv(screenshotEnv) == "1" {
		saveScreenshot(t, ctx)
	}
	run("click force release",
		chromedp.Click(chromedp.CSS(row+" button.release-button")),
		chromedp.WaitVisible(chromedp.CSS("#status.ok, #status.err")))
	if got := text("#status"); got != "Released job:7." {
		t.Fatalf("status after release %q", got)
	}

	// The holder's request ends: its context cancelled with the lost
	// lock, answered 503 since it wrote nothing.
	if cause := testwait.Recv(t, lost, "the holder's context to end"); !errors.Is(cause, locker.ErrLockLost) || !strings.Contains(cause.Error(), "stuck job, test") {
		t.Fatalf("holder's cause: %v", cause)
	}
	if code := testwait.Recv(t, status, "the holder's request to end"); code != http.StatusServiceUnavailable {
		t.Fatalf("holder's request ended with %d, want 503", code)
	}
	st, err = lk.Inspect(t.Context(), "job:7")
	if err != nil || st.Holder != nil {
		t.Fatalf("job:7 after force-release: %+v %v", st, err)
	}
	// The page refreshed: the row is gone, the other lock is still held.
	run("the row goes", chromedp.WaitNotPresent(chromedp.CSS(row)), chromedp.WaitVisible(chromedp.CSS(`tr.lock[data-name="report:daily"]`)))
	// The read-only, redacted mount: the row under its hashed name, no
	// name anywhere in the page, no release button.
	hashed := `tr.lock[data-name="` + redact("report:daily") + `"]`
	run("open the read-only page", chromedp.Navigate(ts.URL+"/readonly/"), chromedp.WaitVisible(chromedp.CSS(hashed)))
	sctx, cancel = context.WithTimeout(ctx, 2*testwait.Timeout)
	html, err := chromedp.Run(sctx, chromedp.Evaluate[string]("document.documentElement.outerHTML"))
	cancel()
	if err != nil || strings.Contains(html, "report:daily") || strings.Contains(html, "release-button") ||
		!strings.Contains(html, "read-only") || !strings.Contains(html, "names redacted") {
		t.Fatalf("read-only redacted page (%v):\n%s", err, html)
	}
	// Audited: who, which lock, why, what happened.
	eventually(t, "the audit record", func() bool { return strings.Contains(logs.String(), "force-release") })
	rec := logs.String()
	for _, want := range []string{`"msg":"locktag: force-release"`, `"who":"operator@127.0.0.1:`, `"lock":"job:7"`, `"reason":"stuck job, test"`, `"result":"released"`} {
		if !strings.Contains(rec, want) {
			t.Errorf("audit record %s lacks %s", rec, want)
		}
	}
}

// findBrowser returns a Chromium's path, installing Debian's chromium
// package when none is found (as `make deps` does); it skips the test only
// where none can be installed.
func findBrowser(t *testing.T) string {
	t.Helper()
	if p := lookBrowser(); p != "" {
		return p
	}
	installOnce.Do(func() { installErr = installChromium() })
	if p := lookBrowser(); p != "" {
		return p
	}
	t.Skipf("no Chromium found and none could be installed (%v): run `make deps` or apt-get install -y chromium", installErr)
	return ""
}

var (
	installOnce sync.Once
	installErr  error
)

func lookBrowser() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// installChromium installs Debian's chromium.
func installChromium() error { return apt.Install("chromium") }

// newBrowser starts a headless Chromium with a fresh profile that reaches
// nothing but the test's servers; it is stopped when the test ends.
func newBrowser(t *testing.T, path string) context.Context {
	t.Helper()
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// Start the browser on a context without a deadline (it lives as long
	// as the first Run's context), bounded here by a watchdog instead.
	done := make(chan error, 1)
	go func() { done <- chromedp.Do(ctx, chromedp.Navigate("about:blank")) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("starting %s: %v", path, err)
		}
	case <-time.After(6 * testwait.Timeout):
		t.Fatalf("starting %s: timed out", path)
	}
	return ctx
}

// saveScreenshot writes the page to docs/img/ops-page.png.
func saveScreenshot(t *testing.T, ctx context.Context) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	path := filepath.Join("..", "..", "..", "docs", "img", "ops-page.png")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s (%d bytes)", path, len(png))
}
