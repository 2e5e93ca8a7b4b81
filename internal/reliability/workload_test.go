package reliability

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/locktag/locktag/locker"
)

// section is one critical section as its client saw it.
type section struct {
	client    string
	key       string
	token     int64
	start     int64 // wall clock, Unix ns: sections of several processes are compared
	end       int64
	confirmed bool   // Release succeeded: the lock was held from Obtain to Release
	release   string // "ok", or the kind of Release's error: "not-held", "unavailable", "other"
	lost      bool   // the lease's context was cancelled with ErrLockLost before Release
	wrote     bool   // the store applied the write
	stale     bool   // the store refused the read or write as stale
}

func (s section) String() string {
	return fmt.Sprintf("SEC %s %s %d %d %d %t %t %t %t %s", s.client, s.key, s.token, s.start, s.end, s.confirmed, s.lost, s.wrote, s.stale, s.release)
}

func parseSection(line string) (section, bool) {
	var s section
	n, err := fmt.Sscanf(line, "SEC %s %s %d %d %d %t %t %t %t %s", &s.client, &s.key, &s.token, &s.start, &s.end, &s.confirmed, &s.lost, &s.wrote, &s.stale, &s.release)
	return s, err == nil && n == 10
}

// overlaps counts pairs of sections on one key that overlap in time, among
// the confirmed ones only (confirmedOnly) or among all. A confirmed section's
// lock existed in Redis under its token from Obtain to Release, so two
// confirmed sections on one key must never overlap. An unconfirmed one lost
// its lock at some point (expiry during a pause, a restart without
// persistence): it may overlap, and fencing is what protects the data then.
func overlaps(secs []section, confirmedOnly bool) int {
	byKey := map[string][]section{}
	for _, s := range secs {
		if !confirmedOnly || s.confirmed {
			byKey[s.key] = append(byKey[s.key], s)
		}
	}
	n := 0
	for _, ss := range byKey {
		slices.SortFunc(ss, func(a, b section) int { return int(a.start - b.start) })
		var maxEnd int64
		for i, s := range ss {
			if i > 0 && s.start < maxEnd {
				n++
			}
			maxEnd = max(maxEnd, s.end)
		}
	}
	return n
}

// tally counts outcomes by kind, for summaries and assertions.
type tally struct {
	mu sync.Mutex
	m  map[string]int
}

func (t *tally) add(kind string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[string]int{}
	}
	t.m[kind]++
}

func (t *tally) get(kind string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[kind]
}

func (t *tally) snapshot() map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]int, len(t.m))
	for k, v := range t.m {
		out[k] = v
	}
	return out
}

// errKind names an error for the tallies.
func errKind(op string, err error) string {
	var k string
	switch {
	case errors.Is(err, errStale):
		k = "stale"
	case errors.Is(err, locker.ErrQuorum):
		k = "quorum"
	case errors.Is(err, locker.ErrPoolExhausted):
		k = "pool exhausted"
	case errors.Is(err, locker.ErrUnavailable):
		k = "unavailable"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		k = "canceled"
	case errors.Is(err, locker.ErrLockLost):
		k = "lost"
	case errors.Is(err, locker.ErrNotHeld):
		k = "not held"
	case errors.Is(err, locker.ErrNotObtained):
		k = "busy"
	default:
		k = "other"
	}
	return op + ": " + k
}

// work is one client's workload: critical sections on key until iters are
// done (iters > 0) or ctx ends.
type work struct {
	client string
	key    string
	iters  int
	params locker.Params
	think  time.Duration // inside the section, between read and write: workload pacing
	pause  time.Duration // between sections: workload pacing
}

// run does the workload, passing each section to emit and each error's
// kind to fail. The critical section reads and writes the store with the
// fencing token; it deliberately uses a context without the lease's
// cancellation, as a careless holder would, so that fencing is what stops
// a holder that lost its lock.
func (w work) run(ctx context.Context, lk *locker.Locker, res resource, emit func(section), fail func(string)) {
	for i := 0; w.iters <= 0 || i < w.iters; i++ {
		if ctx.Err() != nil {
			return
		}
		le, err := lk.Obtain(ctx, w.key, w.params)
		if err != nil {
			if ctx.Err() == nil {
				fail(errKind("obtain", err))
				// A failed Obtain can fail fast (Redis down): pace retries.
				time.Sleep(5 * time.Millisecond)
			}
			continue
		}
		s := section{client: w.client, key: w.key, token: le.Token(), start: time.Now().UnixNano()}
		wctx := context.WithoutCancel(ctx)
		v, err := res.Read(wctx, w.key, s.token)
		if err == nil {
			if w.think > 0 {
				time.Sleep(w.think) // the section's work
			}
			err = res.Write(wctx, w.key, s.token, v, v+1)
			s.wrote = err == nil
		}
		if err != nil {
			s.stale = errors.Is(err, errStale)
			fail(errKind("store", err))
		}
		s.end = time.Now().UnixNano()
		s.lost = le.Lost()
		rerr := le.Release(context.Background())
		s.confirmed = rerr == nil
		switch {
		case rerr == nil:
			s.release = "ok"
		case errors.Is(rerr, locker.ErrNotHeld):
			s.release = "not-held"
		case errors.Is(rerr, locker.ErrUnavailable):
			s.release = "unavailable"
		default:
			s.release = "other"
		}
		if rerr != nil {
			fail(errKind("release", rerr))
		}
		emit(s)
		if w.pause > 0 {
			time.Sleep(w.pause) // pacing between sections
		}
	}
}

// collector gathers sections from goroutines and child processes.
type collector struct {
	mu   sync.Mutex
	secs []section
	errs tally
}

func (c *collector) emit(s section) {
	c.mu.Lock()
	c.secs = append(c.secs, s)
	c.mu.Unlock()
}

func (c *collector) sections() []section {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.secs)
}

// line handles one line of a worker child's output.
func (c *collector) line(l string) {
	if s, ok := parseSection(l); ok {
		c.emit(s)
	} else if kind, ok := strings.CutPrefix(l, "ERR "); ok {
		c.errs.add(kind)
	}
}

// counts summarises sections.
type counts struct {
	sections, confirmed, lost, unnoticed, unknown, wrote, stale int
}

func countSections(secs []section) counts {
	var c counts
	for _, s := range secs {
		c.sections++
		if s.confirmed {
			c.confirmed++
		}
		if s.lost {
			c.lost++
		}
		if !s.lost && s.release == "not-held" {
			c.unnoticed++ // the lock was gone at Release, but the holder had not been told
		}
		if !s.lost && s.release != "ok" && s.release != "not-held" {
			c.unknown++ // Release could not reach Redis: the lease runs out there
		}
		if s.wrote {
			c.wrote++
		}
		if s.stale {
			c.stale++
		}
	}
	return c
}
