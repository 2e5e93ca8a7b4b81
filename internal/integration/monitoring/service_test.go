package monitoring_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	promclient "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/locker/lockotel"
	"github.com/locktag/locktag/locker/redigo"
	"github.com/locktag/locktag/middleware/stdhttp"
)

// shop is the service under test: net/http routes guarded by lock tags,
// a rate tag and an idempotency guard on a real redis-server, with
// locktag's metrics exported the way a service exports them to
// Prometheus: lockotel's observer on an OpenTelemetry MeterProvider whose
// reader is the OpenTelemetry Prometheus exporter, served by promhttp.
type shop struct {
	redis   *redistest.Server
	lk      *locker.Locker
	api     *httptest.Server
	metrics *httptest.Server
	// holding receives the id of each job whose handler holds its lock.
	holding chan string
}

// The routes, which are also the lock names (locktag_lock_name).
const (
	payRoute  = "POST /orders/{id}/pay"  // rate 10/s per user, then the order's lock, waiting up to 500ms
	shipRoute = "POST /orders/{id}/ship" // the order's lock, not waiting: busy while paid
	jobRoute  = "POST /jobs/{id}/run"    // a job's lock, held (watchdog) until ?hold= or the lock is lost
	payments  = "POST /payments"         // idempotency guard, scoped by X-User
	report    = "POST /reports/{id}"     // the report's lock, waiting up to 600ms, held 300ms: a queue at most scrapes
)

func startShop(t *testing.T) *shop {
	t.Helper()
	s := &shop{redis: redistest.Start(t), holding: make(chan string, 16)}
	reg := promclient.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	quiet := slog.New(slog.DiscardHandler) // the outage logs by design
	// A 3s lease renewed every second (retried every 250ms when Redis
	// fails), so renewals, refusals and losses happen within the test.
	s.lk, err = locker.New(redigo.New(s.redis.Pool(t)),
		locker.WithObserver(lockotel.New(lockotel.WithMeterProvider(mp))),
		locker.WithWatchdog(3*time.Second, time.Second), locker.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.lk.Close() })
	reg2, err := lockotel.ObserveServer(s.lk, lockotel.WithMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg2.Unregister() })

	lg := guard.WithLogger(quiet)
	perUser := stdhttp.MustLock(s.lk, `key:"api:{header.X-User}" rate:"10/1s"`, lg)
	order := stdhttp.MustLock(s.lk, `key:"order:{path.id}" wait:"500ms"`, lg)
	orderNow := stdhttp.MustLock(s.lk, `key:"order:{path.id}"`, lg)
	job := stdhttp.MustLock(s.lk, `key:"job:{path.id}"`, lg)
	rep := stdhttp.MustLock(s.lk, `key:"report:{path.id}" wait:"600ms"`, lg)
	idem := stdhttp.MustIdempotency(s.lk, lg, guard.WithScope(func(r *http.Request) (string, error) {
		return r.Header.Get("X-User"), nil
	}))
	mux := http.NewServeMux()
	mux.Handle(payRoute, perUser.Wrap(order.WrapFunc(func(w http.ResponseWriter, r *http.Request) {
		pause(r.Context(), 20*time.Millisecond) // the work under the lock
		w.WriteHeader(http.StatusOK)
	})))
	mux.Handle(shipRoute, orderNow.WrapFunc(func(w http.ResponseWriter, r *http.Request) {
		pause(r.Context(), 5*time.Millisecond)
		w.WriteHeader(http.StatusOK)
	}))
	mux.Handle(report, rep.WrapFunc(func(w http.ResponseWriter, r *http.Request) {
		pause(r.Context(), 300*time.Millisecond)
		w.WriteHeader(http.StatusOK)
	}))
	mux.Handle(jobRoute, job.WrapFunc(func(w http.ResponseWriter, r *http.Request) {
		hold, err := time.ParseDuration(r.URL.Query().Get("hold"))
		if err != nil {
			http.Error(w, "hold", http.StatusBadRequest)
			return
		}
		select {
		case s.holding <- r.PathValue("id"):
		default:
		}
		if !pause(r.Context(), hold) {
			return // lost: the guard answers 503
		}
		w.WriteHeader(http.StatusOK)
	}))
	mux.Handle(payments, idem.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pause(r.Context(), 40*time.Millisecond) // long enough for a concurrent duplicate to conflict
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, "charged")
	})))
	s.api = httptest.NewServer(mux)
	t.Cleanup(s.api.Close)
	s.metrics = httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(s.metrics.Close)
	return s
}

// pause waits for d or until ctx ends; it reports whether d passed.
func pause(ctx context.Context, d time.Duration) bool {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// post sends one request and returns its status (0 when it failed).
func (s *shop) post(ctx context.Context, path, user, key, body string) int {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.api.URL+path, strings.NewReader(body))
	if err != nil {
		return 0
	}
	req.Header.Set("X-User", user)
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// traffic is the load the driver sends; statuses counts the answers by
// route and status.
type traffic struct {
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	mu       sync.Mutex
	statuses map[string]map[int]int
	n        atomic.Int64
}

// drive sends traffic until stop: buyers contending for two orders
// (waits, hand-overs, a few busy), one greedy user over the rate limit, a
// shipper that does not wait (busy), payments with idempotency keys
// (executed, replayed, mismatch, and concurrent duplicates: conflict),
// two report writers taking turns (one always queued), and back-to-back
// jobs whose locks are renewed. Every loop paces itself
// (also when Redis is down and answers come at once) and ends with stop.
func (s *shop) drive() *traffic {
	ctx, cancel := context.WithCancel(context.Background())
	tr := &traffic{cancel: cancel, statuses: map[string]map[int]int{}}
	loop := func(name string, every time.Duration, f func(i int) int) {
		tr.wg.Add(1)
		go func() {
			defer tr.wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				code := f(i)
				tr.n.Add(1)
				tr.mu.Lock()
				if tr.statuses[name] == nil {
					tr.statuses[name] = map[int]int{}
				}
				tr.statuses[name][code]++
				tr.mu.Unlock()
				pause(ctx, every)
			}
		}()
	}
	for u := range 4 {
		user := fmt.Sprintf("buyer-%d", u)
		loop("pay", 100*time.Millisecond, func(i int) int {
			return s.post(ctx, fmt.Sprintf("/orders/%d/pay", 1+(i+u)%2), user, "", "")
		})
	}
	loop("pay (greedy)", 25*time.Millisecond, func(int) int { return s.post(ctx, "/orders/2/pay", "greedy", "", "") })
	loop("ship", 60*time.Millisecond, func(int) int { return s.post(ctx, "/orders/1/ship", "shipper", "", "") })
	loop("payments", 60*time.Millisecond, func(i int) int {
		key := fmt.Sprintf("pay-%d-%d", time.Now().UnixNano(), i)
		body := `{"amount":5}`
		switch i % 4 {
		case 0: // a retry after the answer: replayed
			s.post(ctx, "/payments", "alice", key, body)
		case 1: // the same key with another payload: 422
			s.post(ctx, "/payments", "alice", key, body)
			body = `{"amount":6}`
		case 2: // a duplicate while the first is in flight: 409
			done := make(chan struct{})
			go func() { defer close(done); s.post(ctx, "/payments", "alice", key, body) }()
			pause(ctx, 10*time.Millisecond)
			defer func() { <-done }()
		}
		return s.post(ctx, "/payments", "alice", key, body)
	})
	for range 2 { // one holds the report while the other waits (about 300ms, under LocktagLockWaitHigh's 1s)
		loop("report", 50*time.Millisecond, func(int) int { return s.post(ctx, "/reports/daily", "reporter", "", "") })
	}
	loop("job", 50*time.Millisecond, func(int) int { return s.post(ctx, "/jobs/nightly/run?hold=2500ms", "cron", "", "") })
	return tr
}

// stop ends the traffic and waits for its loops.
func (tr *traffic) stop() {
	tr.cancel()
	tr.wg.Wait()
}

// summary lists the answers by route and status.
func (tr *traffic) summary() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d requests:", tr.n.Load())
	for _, name := range []string{"pay", "pay (greedy)", "ship", "payments", "report", "job"} {
		fmt.Fprintf(&b, " %s %v;", name, tr.statuses[name])
	}
	return b.String()
}
