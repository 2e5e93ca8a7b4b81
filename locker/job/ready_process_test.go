package job_test

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/internal/logtest"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/job"
	"github.com/locktag/locktag/locker/redigo"
)

// readyChildEnv, set to a Redis address, makes TestReadyChild a candidate
// process that serves its readiness on a loopback port; _NAME, _LABEL,
// _LEASE and _MODE say how.
const readyChildEnv = "LOCKTAG_JOB_READY_CHILD"

// readyLease is the children's watchdog lease: a leader stopped or killed
// is replaced one lease after its last renewal.
const readyLease = time.Second

// readyProbeTimeout bounds one probe: a stopped child does not answer.
const readyProbeTimeout = 2 * time.Second

// TestReadyAcrossProcesses: three processes campaign for one name, each
// serving job.ReadyHandler on a loopback port, and the test probes all
// three continuously. The leader is frozen (SIGSTOP): another is ready
// within lease + 1s, and the frozen one, once continued, answers 503 from
// its first answer on. Then the new leader is killed (SIGKILL), and again
// another is ready within lease + 1s. No two answers say ready in a way
// that two leaders at once would need (readyViolations), and the control
// (TestReadyDetectorControl) shows the detector catches a handler that
// does.
func TestReadyAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("campaigns in three processes, freezes and kills them")
	}
	srv := redistest.Start(t)
	ch := startReadyChildren(t, srv, 3, "handler")
	p := probeAll(ch)
	defer p.halt()
	sc := readyScenario{t: t, ch: ch, p: p}

	first := sc.settle(time.Time{}, nil)
	sc.soak(nil)
	frozenReady, contd, second := sc.freeze(first)
	var after readySample
	testwait.Eventually(t, "an answer from the continued process", func() bool {
		var ok bool
		after, ok = p.first(func(s readySample) bool { return s.child == first && s.code != 0 && s.start.After(contd) })
		return ok
	})
	if after.code != http.StatusServiceUnavailable {
		t.Fatalf("the continued process answered %d %+v: want 503", after.code, after.body)
	}
	if b := after.body; !(b.Status == "lost" && strings.Contains(b.Reason, "lock lost")) &&
		!(b.Status == "follower" && b.Leader == ch[second].label && b.Token > 0) {
		t.Errorf("the continued process answered %+v: want lost, or follower naming %s", b, ch[second].label)
	}
	t.Logf("frozen: child %d's successor ready %v after the freeze; continued: first answer %d %+v",
		first, frozenReady.Round(time.Millisecond), after.code, after.body)
	sc.soak(nil)

	killed := time.Now()
	_ = ch[second].cmd.Process.Kill()
	third := sc.awaitReady(killed, second, "after the kill")
	sc.settle(killed, []int{second})
	sc.soak([]int{second})
	t.Logf("killed: child %d's successor (child %d) ready %v after the kill", second, third.child, third.end.Sub(killed).Round(time.Millisecond))
	if d := third.end.Sub(killed); d > readyLease+time.Second {
		t.Errorf("a new leader was ready %v after the kill: want within lease %v + 1s", d, readyLease)
	}

	samples := p.halt()
	if v := readyViolations(samples); len(v) > 0 {
		t.Fatalf("%d violations among %d answers:\n%s", len(v), len(samples), strings.Join(v, "\n"))
	}
	t.Logf("%d answers, %d of them ready (%d terms), none that two leaders at once would need", len(samples), countReady(samples), countTerms(samples))
}

// TestReadyDetectorControl: the same processes with a broken handler, which
// remembers the last term its process led and answers 200 for it, never
// asking whether the term is still live. Once the frozen leader is
// continued, it says ready beside its successor, and readyViolations must
// say so.
func TestReadyDetectorControl(t *testing.T) {
	if testing.Short() {
		t.Skip("campaigns in three processes and freezes one")
	}
	srv := redistest.Start(t)
	ch := startReadyChildren(t, srv, 3, "sticky")
	p := probeAll(ch)
	defer p.halt()
	sc := readyScenario{t: t, ch: ch, p: p}
	first := sc.settle(time.Time{}, nil)
	sc.soak(nil)
	_, contd, _ := sc.freeze(first)
	testwait.Eventually(t, "an answer from the continued process", func() bool {
		_, ok := p.first(func(s readySample) bool { return s.child == first && s.code != 0 && s.start.After(contd) })
		return ok
	})
	v := readyViolations(p.halt())
	if len(v) == 0 {
		t.Fatal("the detector found nothing: a handler that answers 200 for a lost term went unseen")
	}
	t.Logf("the detector caught the broken handler (%d violations), e.g.: %s", len(v), v[0])
}

// readyScenario drives children through failures while p probes them.
type readyScenario struct {
	t  *testing.T
	ch []*readyChild
	p  *prober
}

// settle waits until one child, not among gone, answers 200 (started
// after since) and every other live child answers 503 after that, and
// returns the leader.
func (sc readyScenario) settle(since time.Time, gone []int) int {
	sc.t.Helper()
	leader := -1
	testwait.Eventually(sc.t, "exactly one child ready", func() bool {
		r, ok := sc.p.last(func(s readySample) bool { return s.code == http.StatusOK && s.start.After(since) })
		if !ok {
			return false
		}
		for i := range sc.ch {
			if i == r.child || slices.Contains(gone, i) {
				continue
			}
			if _, ok := sc.p.first(func(s readySample) bool {
				return s.child == i && s.code == http.StatusServiceUnavailable && s.start.After(r.end)
			}); !ok {
				return false
			}
		}
		leader = r.child
		return true
	})
	return leader
}

// soak keeps probing until every child but gone has answered 50 more
// times, so that each steady phase is sampled, not only the changes.
func (sc readyScenario) soak(gone []int) {
	sc.t.Helper()
	from := time.Now()
	for i := range sc.ch {
		if slices.Contains(gone, i) {
			continue
		}
		testwait.Eventually(sc.t, fmt.Sprintf("50 answers from child %d", i), func() bool {
			return sc.p.count(func(s readySample) bool { return s.child == i && s.code != 0 && s.start.After(from) }) >= 50
		})
	}
}

// freeze stops leader, waits for another child to be ready, and continues
// leader; it returns how long after the stop the successor was ready, when
// leader was continued, and the successor.
func (sc readyScenario) freeze(leader int) (readyAfter time.Duration, contd time.Time, successor int) {
	sc.t.Helper()
	cmd := sc.ch[leader].cmd
	stopped := time.Now()
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		sc.t.Fatal(err)
	}
	next := sc.awaitReady(stopped, leader, "after the freeze")
	readyAfter = next.end.Sub(stopped)
	if readyAfter > readyLease+time.Second {
		sc.t.Errorf("a new leader was ready %v after the freeze: want within lease %v + 1s", readyAfter, readyLease)
	}
	contd = time.Now()
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		sc.t.Fatal(err)
	}
	return readyAfter, contd, next.child
}

// awaitReady waits for a 200 from a child other than old, started after
// since.
func (sc readyScenario) awaitReady(since time.Time, old int, what string) readySample {
	sc.t.Helper()
	var r readySample
	testwait.Eventually(sc.t, "another child ready "+what, func() bool {
		var ok bool
		r, ok = sc.p.first(func(s readySample) bool { return s.child != old && s.code == http.StatusOK && s.start.After(since) })
		return ok
	})
	return r
}

// readySample is one probe: when it was sent and answered, by the
// prober's clock, and what came back.
type readySample struct {
	child      int
	start, end time.Time
	code       int // 0: no answer (timed out, refused)
	body       readyAnswer
}

// readyAnswer is ReadyHandler's JSON body.
type readyAnswer struct {
	Status string `json:"status"`
	Reason string `json:"reason"`
	Leader string `json:"leader"`
	Token  int64  `json:"token"`
}

// readyViolations returns the ready answers in samples that no history
// with one leader at a time can explain. An answer was decided at some
// instant between its probe's start and end, so two answers only prove an
// overlap through the order the terms must have: a term begins only after
// the term before it ended (its process no longer answers 200 for it), and
// later terms have larger tokens. So it reports
//
//   - a 200 without a term (token 0), or one term ready on two children;
//   - a 200 for term T answered entirely (start to end) after a 200 for a
//     later term U > T had been answered entirely: U was live before T's
//     last ready answer, so both were live at once.
//
// Two ready answers whose windows merely overlap, or a 200 that comes late
// to the prober, prove nothing and are not reported.
func readyViolations(samples []readySample) []string {
	type termSeen struct {
		token     int64
		child     map[int]bool
		firstEnd  readySample // the ready answer that ended first
		lastStart readySample // the ready answer that started last
	}
	var out []string
	terms := map[int64]*termSeen{}
	for _, s := range samples {
		if s.code != http.StatusOK {
			continue
		}
		if s.body.Token <= 0 {
			out = append(out, fmt.Sprintf("child %d ready without a term: %+v", s.child, s.body))
			continue
		}
		ts := terms[s.body.Token]
		if ts == nil {
			ts = &termSeen{token: s.body.Token, child: map[int]bool{}, firstEnd: s, lastStart: s}
			terms[s.body.Token] = ts
		}
		ts.child[s.child] = true
		if s.end.Before(ts.firstEnd.end) {
			ts.firstEnd = s
		}
		if s.start.After(ts.lastStart.start) {
			ts.lastStart = s
		}
	}
	var order []*termSeen
	for _, ts := range terms {
		if len(ts.child) > 1 {
			out = append(out, fmt.Sprintf("term %d ready on children %v", ts.token, ts.child))
		}
		order = append(order, ts)
	}
	slices.SortFunc(order, func(a, b *termSeen) int { return cmp.Compare(a.token, b.token) })
	var latest *termSeen // among the earlier terms, the one answered ready last
	for _, ts := range order {
		if latest != nil && ts.firstEnd.end.Before(latest.lastStart.start) {
			out = append(out, fmt.Sprintf("term %d (child %d) was ready by %v, yet term %d (child %d) answered ready after, from %v",
				ts.token, ts.firstEnd.child, ts.firstEnd.end.Format("15:04:05.000000"),
				latest.token, latest.lastStart.child, latest.lastStart.start.Format("15:04:05.000000")))
		}
		if latest == nil || ts.lastStart.start.After(latest.lastStart.start) {
			latest = ts
		}
	}
	return out
}

// TestReadyViolations: the detector on hand-made histories.
func TestReadyViolations(t *testing.T) {
	at := func(ms int) time.Time { return time.Unix(0, 0).Add(time.Duration(ms) * time.Millisecond) }
	ready := func(child, from, to int, token int64) readySample {
		return readySample{child: child, start: at(from), end: at(to), code: 200, body: readyAnswer{Status: "leader", Token: token}}
	}
	tests := []struct {
		name    string
		samples []readySample
		want    int
	}{
		{"one leader", []readySample{ready(0, 0, 1, 1), ready(0, 2, 3, 1)}, 0},
		{"hand-over", []readySample{ready(0, 0, 1, 1), ready(1, 2, 3, 2), ready(1, 4, 5, 2)}, 0},
		// The old leader's answer started before the new one's ended:
		// decided before the hand-over, delivered after it.
		{"late delivery", []readySample{ready(1, 2, 3, 2), ready(0, 1, 9, 1)}, 0},
		{"old term after new", []readySample{ready(1, 2, 3, 2), ready(0, 4, 5, 1)}, 1},
		{"old term after new, later term ok", []readySample{ready(0, 0, 1, 1), ready(1, 2, 3, 2), ready(2, 4, 5, 3)}, 0},
		{"one term, two children", []readySample{ready(0, 0, 1, 4), ready(1, 2, 3, 4)}, 1},
		{"no term", []readySample{ready(0, 0, 1, 0)}, 1},
		{"not ready is no evidence", []readySample{ready(1, 2, 3, 2), {child: 0, start: at(4), end: at(5), code: 503, body: readyAnswer{Token: 1}}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if v := readyViolations(tt.samples); len(v) != tt.want {
				t.Fatalf("got %d violations %q, want %d", len(v), v, tt.want)
			}
		})
	}
}

func countTerms(samples []readySample) int {
	terms := map[int64]bool{}
	for _, s := range samples {
		if s.code == http.StatusOK {
			terms[s.body.Token] = true
		}
	}
	return len(terms)
}

func countReady(samples []readySample) int {
	n := 0
	for _, s := range samples {
		if s.code == http.StatusOK {
			n++
		}
	}
	return n
}

// readyChild is one candidate process.
type readyChild struct {
	cmd   *exec.Cmd
	url   string
	label string
}

// startReadyChildren starts n candidate processes for one name on srv, in
// mode "handler" (job.ReadyHandler) or "sticky" (the control's broken
// handler), and waits until each serves.
func startReadyChildren(t *testing.T, srv *redistest.Server, n int, mode string) []*readyChild {
	t.Helper()
	out := make([]*readyChild, n)
	for i := range out {
		c := &readyChild{label: fmt.Sprintf("child-%d", i)}
		c.cmd = exec.Command(os.Args[0], "-test.run=^TestReadyChild$", "-test.count=1", "-test.timeout=0")
		c.cmd.Env = append(os.Environ(), readyChildEnv+"="+srv.Addr(), readyChildEnv+"_NAME=leader:ready",
			readyChildEnv+"_LABEL="+c.label, readyChildEnv+"_LEASE="+readyLease.String(), readyChildEnv+"_MODE="+mode)
		c.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if _, err := c.cmd.StdinPipe(); err != nil { // closed when the test ends: the child quits
			t.Fatal(err)
		}
		stdout, err := c.cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		logs := new(logtest.Buffer) // the child's stderr, and its stdout but the address
		c.cmd.Stderr = logs
		if err := c.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = c.cmd.Process.Kill()
			_ = c.cmd.Wait()
			if t.Failed() {
				t.Logf("%s's output:\n%s", c.label, logs.String())
			}
		})
		addr := make(chan string, 1)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				if a, ok := strings.CutPrefix(sc.Text(), "SERVING "); ok {
					addr <- a
					continue
				}
				_, _ = fmt.Fprintln(logs, sc.Text())
			}
		}()
		c.url = "http://" + testwait.Recv(t, addr, c.label+" serving") + "/ready"
		out[i] = c
	}
	return out
}

// TestReadyChild is a candidate process of TestReadyAcrossProcesses: it
// campaigns with a Run whose lead waits for its term's end, serves its
// readiness on a loopback port, prints "SERVING host:port", and quits when
// its stdin closes.
func TestReadyChild(t *testing.T) {
	addr := os.Getenv(readyChildEnv)
	if addr == "" {
		t.Skip("run by TestReadyAcrossProcesses")
	}
	env := func(k string) string { return os.Getenv(readyChildEnv + "_" + k) }
	lease, err := time.ParseDuration(env("LEASE"))
	if err != nil {
		t.Fatal(err)
	}
	pool := &redis.Pool{MaxIdle: 8, DialContext: func(ctx context.Context) (redis.Conn, error) {
		return redis.DialContext(ctx, "tcp", addr, redis.DialConnectTimeout(time.Second))
	}}
	lk, err := locker.New(redigo.New(pool), locker.WithWatchdog(lease, lease/3), locker.WithLabel(env("LABEL")))
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Close()
	el, err := job.NewElector(lk, env("NAME"), job.WithRetryDelay(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	var led atomic.Int64 // the last term's token
	var h http.Handler
	switch env("MODE") {
	case "sticky":
		h = stickyReady(&led)
	default:
		if h, err = job.ReadyHandler(el); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: h}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- el.Run(ctx, func(ctx context.Context, term job.Term) error {
			led.Store(term.Token())
			<-ctx.Done()
			return nil
		})
	}()
	fmt.Println("SERVING", ln.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin)
	cancel()
	<-done
}

// stickyReady is the control's broken readiness: 200 with the last term
// its process led, whether or not that term is still live.
func stickyReady(led *atomic.Int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		tok := led.Load()
		if tok == 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = fmt.Fprintln(w, `{"status":"follower"}`)
			return
		}
		_, _ = fmt.Fprintf(w, `{"status":"leader","token":%d}`+"\n", tok)
	})
}

// prober probes every child continuously, one goroutine each, and keeps
// every answer.
type prober struct {
	stop chan struct{}
	wg   sync.WaitGroup
	once sync.Once

	mu      sync.Mutex
	samples []readySample
}

func probeAll(ch []*readyChild) *prober {
	p := &prober{stop: make(chan struct{})}
	for i, c := range ch {
		client := &http.Client{Timeout: readyProbeTimeout}
		p.wg.Go(func() {
			defer client.CloseIdleConnections()
			for {
				select {
				case <-p.stop:
					return
				default:
				}
				s := probe(client, i, c.url)
				p.mu.Lock()
				p.samples = append(p.samples, s)
				p.mu.Unlock()
				time.Sleep(3 * time.Millisecond) // the probing pace, not synchronisation
			}
		})
	}
	return p
}

// probe sends one GET and reads the answer.
func probe(client *http.Client, child int, url string) readySample {
	s := readySample{child: child, start: time.Now()}
	resp, err := client.Get(url)
	if err == nil {
		b, rerr := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if rerr == nil && json.Unmarshal(b, &s.body) == nil {
			s.code = resp.StatusCode
		}
	}
	s.end = time.Now()
	return s
}

// halt stops probing and returns every answer.
func (p *prober) halt() []readySample {
	p.once.Do(func() { close(p.stop) })
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.samples)
}

// first returns the earliest answer (by end) that ok accepts.
func (p *prober) first(ok func(readySample) bool) (readySample, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.samples {
		if ok(s) {
			return s, true
		}
	}
	return readySample{}, false
}

// count returns how many answers ok accepts.
func (p *prober) count(ok func(readySample) bool) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, s := range p.samples {
		if ok(s) {
			n++
		}
	}
	return n
}

// last returns the latest answer (by end) that ok accepts.
func (p *prober) last(ok func(readySample) bool) (readySample, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range slices.Backward(p.samples) {
		if ok(s) {
			return s, true
		}
	}
	return readySample{}, false
}
