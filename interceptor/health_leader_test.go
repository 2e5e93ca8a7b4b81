package interceptor_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locktag/locktag/interceptor"
	"github.com/locktag/locktag/internal/flaky"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/job"
	"github.com/locktag/locktag/locker/redigo"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/test/bufconn"
)

const (
	leaderService = "locktag.leader"
	leaderLease   = time.Second // the candidates' watchdog lease
)

const (
	serving    = healthpb.HealthCheckResponse_SERVING
	notServing = healthpb.HealthCheckResponse_NOT_SERVING
)

// TestHealthLeaderAcrossServers: three candidates, each a Locker, an
// Elector and a HealthServer with WithLeader, are checked continuously
// on the leader's name. While the first leader leads, no other server says
// SERVING; once it is cut off from Redis it says NOT_SERVING from the
// moment its term ended, another says SERVING within lease + 1s, and each
// server's Watch stream sends both changes. TestHealthLeaderControl shows
// the checks catch a server that keeps saying SERVING after its term.
func TestHealthLeaderAcrossServers(t *testing.T) {
	r := leaderFailover(t, false)
	if len(r.violations) > 0 {
		t.Fatalf("%d violations among %d answers:\n%s", len(r.violations), r.answers, strings.Join(r.violations, "\n"))
	}
	old, next := r.cands[r.old], r.cands[r.next]
	lostSent := old.watched(notServing, r.cut)
	electedSent := next.watched(serving, r.cut)
	t.Logf("cut off: term ended %v after, successor SERVING %v after; Watch sent NOT_SERVING %v and SERVING %v after; %d answers",
		r.lost.Sub(r.cut).Round(time.Millisecond), r.readyAfter.Round(time.Millisecond),
		lostSent.Sub(r.cut).Round(time.Millisecond), electedSent.Sub(r.cut).Round(time.Millisecond), r.answers)
	if lostSent.IsZero() || electedSent.IsZero() {
		t.Fatalf("Watch missed a change: NOT_SERVING from the old leader at %v, SERVING from the new at %v", lostSent, electedSent)
	}
	if d := lostSent.Sub(r.lost); d > time.Second {
		t.Errorf("the old leader's Watch sent NOT_SERVING %v after its term ended", d)
	}
	if d := electedSent.Sub(r.cut); d > leaderLease+time.Second {
		t.Errorf("the new leader's Watch sent SERVING %v after the cut: want within lease %v + 1s", d, leaderLease)
	}
	// List agrees with the Elector, when its term spans the call.
	before, led := next.el.Term()
	l, err := next.client.List(context.Background(), &healthpb.HealthListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	after, leads := next.el.Term()
	if st := l.Statuses[leaderService].GetStatus(); led && leads && before.Token() == after.Token() && st != serving {
		t.Fatalf("List on the new leader: %v during its term", st)
	}
}

// TestHealthLeaderControl runs the same failover with a broken health
// service, SERVING on every server that ever led: the checks must report
// the cut-off leader's SERVING after its term ended.
func TestHealthLeaderControl(t *testing.T) {
	r := leaderFailover(t, true)
	if len(r.violations) == 0 {
		t.Fatal("the checks found nothing: a leader SERVING after its term went unseen")
	}
	t.Logf("the checks caught the broken service (%d violations), e.g.: %s", len(r.violations), r.violations[0])
}

// candidate is one server of leaderFailover.
type candidate struct {
	el     *job.Elector
	f      *flaky.Driver
	client healthpb.HealthClient

	mu     sync.Mutex
	terms  []leaderTerm // as lead saw them
	watch  []watchMsg   // what its Watch stream sent
	checks []checkAnswer
}

type leaderTerm struct {
	token        int64
	began, ended time.Time // ended: zero while live
}

type watchMsg struct {
	at     time.Time
	status healthpb.HealthCheckResponse_ServingStatus
}

// checkAnswer is one Check: when it was sent and answered, and what came
// back (SERVICE_UNKNOWN: an error).
type checkAnswer struct {
	start, end time.Time
	status     healthpb.HealthCheckResponse_ServingStatus
}

// watched returns when c's Watch stream sent st after since, or zero.
func (c *candidate) watched(st healthpb.HealthCheckResponse_ServingStatus, since time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.watch {
		if m.status == st && m.at.After(since) {
			return m.at
		}
	}
	return time.Time{}
}

func (c *candidate) answers(ok func(checkAnswer) bool) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, a := range c.checks {
		if ok(a) {
			n++
		}
	}
	return n
}

// failoverRun is what leaderFailover saw.
type failoverRun struct {
	cands      []*candidate
	old, next  int       // the first leader, and its successor
	cut        time.Time // when the old leader was cut off
	lost       time.Time // when its lead saw its term end
	readyAfter time.Duration
	answers    int
	violations []string
}

// leaderFailover starts three candidates, checks their leader name
// continuously, cuts the first leader off from Redis and waits for its
// successor. sticky replaces the HealthServer by the control's broken
// service. The violations are Check answers that no history with one
// leader at a time explains:
//
//   - phase one: another server SERVING while the first leader's one
//     term was live from before the phase to after it;
//   - the cut-off leader SERVING in a Check sent after its lead saw the
//     term end (it cannot lead again: it stays cut off);
//   - SERVING from a server that had no term at all.
func leaderFailover(t *testing.T, sticky bool) *failoverRun {
	srv := redistest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	r := &failoverRun{}
	for range 3 {
		r.cands = append(r.cands, startCandidate(t, ctx, srv, sticky))
	}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for i, c := range r.cands {
			c.mu.Lock()
			for _, tm := range c.terms {
				t.Logf("server %d led term %d from %s to %s", i, tm.token, clock(tm.began), clock(tm.ended))
			}
			c.mu.Unlock()
		}
	})
	var stop atomic.Bool
	var wg, watchers sync.WaitGroup // the checkers, the Watch streams
	t.Cleanup(func() { stop.Store(true); cancel(); wg.Wait(); watchers.Wait() })
	for _, c := range r.cands {
		if !sticky {
			w, err := c.client.Watch(ctx, &healthpb.HealthCheckRequest{Service: leaderService})
			if err != nil {
				t.Fatal(err)
			}
			watchers.Go(func() {
				for {
					m, err := w.Recv()
					if err != nil {
						return
					}
					c.mu.Lock()
					c.watch = append(c.watch, watchMsg{time.Now(), m.Status})
					c.mu.Unlock()
				}
			})
		}
		wg.Go(func() {
			for !stop.Load() {
				a := checkAnswer{start: time.Now()}
				if resp, err := c.client.Check(ctx, &healthpb.HealthCheckRequest{Service: leaderService}); err == nil {
					a.status = resp.Status
				}
				a.end = time.Now()
				c.mu.Lock()
				c.checks = append(c.checks, a)
				c.mu.Unlock()
				time.Sleep(2 * time.Millisecond) // the checking pace, not synchronisation
			}
		})
	}

	// Phase one: the first leader leads, the others answer NOT_SERVING.
	var first job.Term
	testwait.Eventually(t, "one leader", func() bool {
		for i, c := range r.cands {
			if tm, ok := c.el.Term(); ok {
				r.old, first = i, tm
				return true
			}
		}
		return false
	})
	from := time.Now()
	soak(t, r.cands, from, nil)
	to := time.Now()
	if tm, ok := r.cands[r.old].el.Term(); ok && tm.Token() == first.Token() {
		for i, c := range r.cands {
			if i == r.old {
				continue
			}
			for _, a := range c.snapshot() {
				if a.status == serving && a.start.After(from) && a.end.Before(to) {
					r.violations = append(r.violations, fmt.Sprintf("server %d SERVING (%s to %s) while server %d led term %d throughout", i, clock(a.start), clock(a.end), r.old, first.Token()))
				}
			}
		}
	} else {
		t.Logf("the first leader's term ended during phase one (a loaded machine): phase one not checked")
	}

	// Phase two: the leader is cut off; its successor takes over.
	old := r.cands[r.old]
	r.cut = time.Now()
	old.f.Down.Store(true)
	testwait.Eventually(t, "the cut-off leader's term ends", func() bool {
		old.mu.Lock()
		defer old.mu.Unlock()
		if n := len(old.terms); n > 0 && !old.terms[n-1].ended.IsZero() {
			r.lost = old.terms[n-1].ended
			return true
		}
		return false
	})
	var ready time.Time
	testwait.Eventually(t, "another server SERVING", func() bool {
		for i, c := range r.cands {
			if i == r.old {
				continue
			}
			c.mu.Lock()
			for _, a := range c.checks {
				if a.status == serving && a.start.After(r.cut) {
					r.next, ready = i, a.end
					break
				}
			}
			c.mu.Unlock()
			if !ready.IsZero() {
				return true
			}
		}
		return false
	})
	r.readyAfter = ready.Sub(r.cut)
	if r.readyAfter > leaderLease+time.Second {
		t.Errorf("a new leader SERVING %v after the cut: want within lease %v + 1s", r.readyAfter, leaderLease)
	}
	soak(t, r.cands, time.Now(), nil)
	if !sticky {
		testwait.Eventually(t, "both changes watched", func() bool {
			return !old.watched(notServing, r.cut).IsZero() && !r.cands[r.next].watched(serving, r.cut).IsZero()
		})
	}
	stop.Store(true)
	wg.Wait()

	// Every term begun is in its candidate's record once lead was called:
	// wait for the current ones.
	testwait.Eventually(t, "terms recorded", func() bool {
		for _, c := range r.cands {
			tm, ok := c.el.Term()
			c.mu.Lock()
			n := len(c.terms)
			seen := n > 0 && c.terms[n-1].token == tm.Token()
			c.mu.Unlock()
			if ok && !seen {
				return false
			}
		}
		return true
	})
	for i, c := range r.cands {
		c.mu.Lock()
		for _, a := range c.checks {
			r.answers++
			if a.status != serving {
				continue
			}
			switch {
			case i == r.old && a.start.After(r.lost):
				r.violations = append(r.violations, fmt.Sprintf("server %d SERVING (%s to %s) after its term ended at %s", i, clock(a.start), clock(a.end), clock(r.lost)))
			case len(c.terms) == 0:
				r.violations = append(r.violations, fmt.Sprintf("server %d SERVING (%s to %s) without ever leading", i, clock(a.start), clock(a.end)))
			}
		}
		c.mu.Unlock()
	}
	return r
}

// clock formats t for a violation's message.
func clock(t time.Time) string { return t.Format("15:04:05.000000") }

func (c *candidate) snapshot() []checkAnswer {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.checks)
}

// soak waits until every candidate but those in gone answered 50 Checks
// sent after from, so that the phase is sampled, not only its changes.
func soak(t *testing.T, cands []*candidate, from time.Time, gone []int) {
	t.Helper()
	for i, c := range cands {
		if slices.Contains(gone, i) {
			continue
		}
		testwait.Eventually(t, fmt.Sprintf("50 answers from server %d", i), func() bool {
			return c.answers(func(a checkAnswer) bool { return a.status != 0 && a.start.After(from) }) >= 50
		})
	}
}

// startCandidate starts a Locker that can be cut off from srv, an Elector
// campaigning on it, and its health service over bufconn.
func startCandidate(t *testing.T, ctx context.Context, srv *redistest.Server, sticky bool) *candidate {
	t.Helper()
	c := &candidate{f: &flaky.Driver{Driver: redigo.New(srv.Pool(t))}}
	lk, err := locker.New(c.f, locker.WithWatchdog(leaderLease, leaderLease/3))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.f.Down.Store(false); _ = lk.Close() })
	if c.el, err = job.NewElector(lk, "leader:health", job.WithRetryDelay(20*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	var hs healthpb.HealthServer
	if sticky {
		hs = &stickyHealth{c: c}
	} else if hs, err = interceptor.NewHealthServer(lk, interceptor.WithLeader(leaderService, c.el)); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = c.el.Run(ctx, func(tctx context.Context, term job.Term) error {
			c.mu.Lock()
			c.terms = append(c.terms, leaderTerm{token: term.Token(), began: time.Now()})
			i := len(c.terms) - 1
			c.mu.Unlock()
			<-tctx.Done()
			c.mu.Lock()
			c.terms[i].ended = time.Now()
			c.mu.Unlock()
			return nil
		})
	}()
	t.Cleanup(func() { <-done })

	lis := bufconn.Listen(1 << 20)
	s := grpc.NewServer()
	healthpb.RegisterHealthServer(s, hs)
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	c.client = healthpb.NewHealthClient(conn)
	return c
}

// stickyHealth is the control's broken health service: SERVING once its
// candidate has led, whether or not it still leads.
type stickyHealth struct {
	healthpb.UnimplementedHealthServer
	c *candidate
}

func (s *stickyHealth) Check(context.Context, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	s.c.mu.Lock()
	led := len(s.c.terms) > 0
	s.c.mu.Unlock()
	if led {
		return &healthpb.HealthCheckResponse{Status: serving}, nil
	}
	return &healthpb.HealthCheckResponse{Status: notServing}, nil
}

// TestWithLeaderOptions: a bad WithLeader is a construction error wrapping
// locker.ErrBadOption that names the option; the server as a whole and
// other names keep following Redis.
func TestWithLeaderOptions(t *testing.T) {
	lk, err := locker.New(redigo.New(exampleRedis.NewPool()))
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Close()
	el, _ := job.NewElector(lk, "leader:options")
	for _, tt := range []struct {
		name string
		opts []interceptor.HealthOption
		want string
	}{
		{"empty name", []interceptor.HealthOption{interceptor.WithLeader("", el)}, `WithLeader("")`},
		{"nil elector", []interceptor.HealthOption{interceptor.WithLeader(leaderService, nil)}, "nil Elector"},
		{"twice", []interceptor.HealthOption{interceptor.WithLeader(leaderService, el), interceptor.WithLeader(leaderService, el)}, "given twice"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			hs, err := interceptor.NewHealthServer(lk, tt.opts...)
			if hs != nil || !errors.Is(err, locker.ErrBadOption) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("NewHealthServer = %v, %v; want ErrBadOption naming %s", hs, err, tt.want)
			}
		})
	}

	hs, err := interceptor.NewHealthServer(lk, interceptor.WithLeader(leaderService, el), interceptor.WithLeader("other.leader", el))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	check := func(service string) healthpb.HealthCheckResponse_ServingStatus {
		resp, err := hs.Check(ctx, &healthpb.HealthCheckRequest{Service: service})
		if err != nil {
			t.Fatal(err)
		}
		return resp.Status
	}
	if a, b, c := check(""), check("shop.v1.Shop"), check(leaderService); a != serving || b != serving || c != notServing {
		t.Fatalf("not leading: whole %v, other %v, leader %v", a, b, c)
	}
	term, err := el.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st := check(leaderService); st != serving {
		t.Fatalf("leading: %v", st)
	}
	l, err := hs.List(ctx, &healthpb.HealthListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Statuses) != 3 || l.Statuses[""].Status != serving || l.Statuses[leaderService].Status != serving || l.Statuses["other.leader"].Status != serving {
		t.Fatalf("List: %v", l.Statuses)
	}
	_ = term.Resign(ctx)
	if st := check(leaderService); st != notServing {
		t.Fatalf("resigned: %v", st)
	}
}
