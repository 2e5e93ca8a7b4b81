package reliability

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/reliability/faults"
	"github.com/locktag/locktag/locker"
)

var soakFor = flag.Duration("soak", 0, "run TestSoak for this long (e.g. 10m); 0 skips it")

// soakFaultEvery is the period of the fault schedule; soakPause paces each
// client between sections, to keep the soak's CPU use moderate on a shared
// machine.
const (
	soakFaultEvery = 3 * time.Second
	soakPause      = 20 * time.Millisecond
)

// TestSoak runs mixed load for -soak with a fault injected every few
// seconds, in rotation: redis-server restarted without persistence, CLIENT
// PAUSE longer than a lease, 300ms reply latency, connection resets, a
// reply black hole, a 1 KB/s link, a worker process SIGKILLed (and
// replaced), a worker process SIGSTOPped for two leases. The clients are
// four goroutines with their own pools and two worker processes, all
// through a toxiproxy, on two keys, writing a fenced store. It prints a
// summary table and fails on any overlap between confirmed critical
// sections or any lost update.
func TestSoak(t *testing.T) {
	if *soakFor <= 0 {
		t.Skip("soak mode: go test ./internal/reliability -run TestSoak -v -soak=10m")
	}
	soak(t, *soakFor, soakFaultEvery, 0)
}

// TestSoakSmoke is the soak in CI's short mode: one round of every fault,
// half a second apart, so the soak's machinery is exercised (under -race)
// and cannot rot between soak runs.
func TestSoakSmoke(t *testing.T) {
	soak(t, time.Minute, 500*time.Millisecond, 8)
}

// soak runs the mixed load for d (or until rounds faults were injected,
// when rounds > 0), with a fault every period.
func soak(t *testing.T, d, every time.Duration, rounds int) {
	srv := redistest.Start(t)
	px := faults.NewProxy(t, srv.Addr())
	st := newStore(true)
	url := st.serve(t)
	var c collector
	const lease = time.Second
	keys := []string{"soak-a", "soak-b"}
	params := locker.Params{Wait: 3 * time.Second} // watchdog leases
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// Goroutine clients: three watchdog, one with a fixed TTL.
	var wg sync.WaitGroup
	for i := range 4 {
		lk := newLocker(t, px.Pool(t, faults.PoolOptions{Timeout: 2 * time.Second}),
			locker.WithWatchdog(lease, lease/5), locker.WithCallTimeout(500*time.Millisecond))
		w := work{client: fmt.Sprintf("g%d", i), key: keys[i%2], params: params, think: 2 * time.Millisecond, pause: soakPause}
		if i == 3 {
			w.params.TTL = 500 * time.Millisecond
		}
		wg.Go(func() { w.run(ctx, lk, st, c.emit, c.errs.add) })
	}
	// Worker processes.
	type proc struct {
		ch   *faults.Child
		done <-chan struct{}
	}
	procs := make([]proc, 2)
	spawn := func(i int) {
		e := childEnv{addr: px.Addr(), store: url, client: fmt.Sprintf("p%d", i), key: keys[i%2],
			wait: params.Wait, lease: lease, renew: lease / 5, think: 2 * time.Millisecond, pause: soakPause}
		ch, done := startWorker(t, e, &c)
		procs[i] = proc{ch, done}
	}
	for i := range procs {
		spawn(i)
	}

	// alive reports whether worker i still runs; one that exited on its
	// own is counted as an error and replaced.
	alive := func(i int) bool {
		select {
		case <-procs[i].ch.Exited():
			c.errs.add("worker process exited unexpectedly")
			t.Logf("worker %d exited unexpectedly; stderr: %s", i, procs[i].ch.Stderr())
			spawn(i)
			return false
		default:
			return true
		}
	}
	var injected tally
	faultList := []struct {
		name string
		do   func()
	}{
		{"redis restart", func() { srv.Restart() }},
		{"CLIENT PAUSE 1.5s", func() {
			if err := faults.ClientPause(srv, 1500*time.Millisecond, false); err != nil {
				t.Log(err)
			}
			time.Sleep(1500 * time.Millisecond) // the pause's duration
		}},
		{"latency 300ms for 2s", func() {
			n := px.Latency(faults.Downstream, 300*time.Millisecond, 50*time.Millisecond)
			time.Sleep(2 * time.Second) // the fault's duration
			px.Remove(n)
		}},
		{"reset_peer for 300ms", func() {
			n := px.ResetPeer(faults.Downstream, 0)
			time.Sleep(300 * time.Millisecond) // the fault's duration
			px.Remove(n)
		}},
		{"reply black hole 800ms", func() {
			n := px.Timeout(faults.Downstream, 0)
			time.Sleep(800 * time.Millisecond) // the fault's duration
			px.Remove(n)
		}},
		{"bandwidth 1KB/s for 1s", func() {
			n := px.Bandwidth(faults.Downstream, 1)
			time.Sleep(time.Second) // the fault's duration
			px.Remove(n)
		}},
		{"worker SIGKILL", func() {
			if alive(0) {
				procs[0].ch.Kill()
				spawn(0)
			}
		}},
		{"worker SIGSTOP 2s", func() {
			if alive(1) {
				procs[1].ch.Stop()
				time.Sleep(2 * lease) // the pause's duration
				procs[1].ch.Cont()
			}
		}},
	}
	start := time.Now()
	deadline := start.Add(d)
	for i := 0; time.Now().Before(deadline) && (rounds <= 0 || i < rounds); i++ {
		time.Sleep(every) // healthy time between faults
		if !time.Now().Before(deadline) {
			break
		}
		f := faultList[i%len(faultList)]
		f.do()
		injected.add(f.name)
		if rounds <= 0 && i%len(faultList) == len(faultList)-1 {
			n := countSections(c.sections())
			t.Logf("%v: %d sections, %d faults", time.Since(start).Round(time.Second), n.sections, i+1)
		}
	}
	cancel()
	wg.Wait()
	for i, p := range procs {
		if !alive(i) {
			p = procs[i]
		}
		p.ch.Send("stop")
		within(t, 30*time.Second, "worker process done", p.done)
	}

	secs := c.sections()
	n := countSections(secs)
	var values, writes, lost, stale int64
	for _, k := range keys {
		v, w, l, s := st.stats(k)
		values += v
		writes, lost, stale = w, l, s // store-wide counters
	}
	confirmedOverlaps := overlaps(secs, true)
	allOverlaps := overlaps(secs, false)

	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(k string, v any) { fmt.Fprintf(tw, "%s\t%v\t\n", k, v) }
	fmt.Fprintf(&b, "\nsoak: %v, %d goroutine clients + %d processes, %d keys, lease %v\n", time.Since(start).Round(time.Second), 4, len(procs), len(keys), lease)
	row("critical sections", n.sections)
	row("  confirmed by release", n.confirmed)
	row("overlaps (confirmed sections)", confirmedOverlaps)
	row("sections overlapping an earlier one, lost locks included", allOverlaps)
	row("writes applied", writes)
	row("lost updates", lost)
	row("counter total", values)
	row("stale reads/writes rejected", stale)
	row("locks lost and noticed", n.lost)
	row("locks lost, not noticed before release", n.unnoticed)
	row("releases that could not reach Redis", n.unknown)
	tw.Flush()
	b.WriteString("errors by kind:\n")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	errs := c.errs.snapshot()
	for _, k := range slices.Sorted(maps.Keys(errs)) {
		row("  "+k, errs[k])
	}
	tw.Flush()
	b.WriteString("faults injected:\n")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	inj := injected.snapshot()
	for _, k := range slices.Sorted(maps.Keys(inj)) {
		row("  "+k, inj[k])
	}
	tw.Flush()
	t.Log(b.String())

	if confirmedOverlaps != 0 {
		t.Errorf("%d overlaps between confirmed critical sections", confirmedOverlaps)
	}
	if lost != 0 || values != writes {
		t.Errorf("%d lost updates; counter total %d, writes %d", lost, values, writes)
	}
	if n.sections == 0 {
		t.Error("no critical sections")
	}
	if k := c.errs.get("worker process exited unexpectedly"); k != 0 {
		t.Errorf("%d worker processes exited on their own", k)
	}
}
