package main

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// mono is CLOCK_MONOTONIC in nanoseconds: one clock for every process on the
// machine, so critical sections recorded by different processes compare.
func mono() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// rec is one lock call: called, acquired (Lock returned), released (unlock
// called; the critical section is [acquired, released]) and done (unlock
// returned). Worker ids are unique across processes.
type rec struct {
	Called, Acquired, Released, Done int64
	Worker                           int32
	Failed                           bool // Lock returned an error (e.g. cancelled at the end)
}

// load describes one measured run of c workers against one Lock.
type load struct {
	c           int
	key         func(w int) string
	hold, think time.Duration
	warm, dur   time.Duration
	grace       time.Duration // how long calls in flight at the end may still finish
	workerBase  int32
}

// window is the measured interval [start, end) on the mono clock.
type window struct{ start, end int64 }

// holders is the in-process live overlap detector: holders per key.
type holders struct {
	mu         sync.Mutex
	m          map[string]*atomic.Int32
	violations atomic.Int64
}

func (h *holders) enter(key string) *atomic.Int32 {
	h.mu.Lock()
	n := h.m[key]
	if n == nil {
		n = new(atomic.Int32)
		h.m[key] = n
	}
	h.mu.Unlock()
	if n.Add(1) != 1 {
		h.violations.Add(1)
	}
	return n
}

// drive runs ld against l starting at the mono time t0: warm-up, then the
// measured window, then a grace for calls in flight. onWindow runs at the
// window's start and end (to snapshot counters). It returns every call
// started inside the window, and the live detector's violations.
func drive(l Lock, ld load, t0 int64, onWindow func(start bool)) ([]rec, window, int64) {
	w := window{start: t0 + int64(ld.warm), end: t0 + int64(ld.warm+ld.dur)}
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(time.Duration(w.end-mono())+ld.grace))
	defer cancel()
	det := &holders{m: map[string]*atomic.Int32{}}
	per := make([][]rec, ld.c)
	var wg sync.WaitGroup
	for i := range ld.c {
		wg.Go(func() {
			key := ld.key(i)
			var out []rec
			for {
				r := rec{Called: mono(), Worker: ld.workerBase + int32(i)}
				if r.Called >= w.end {
					break
				}
				unlock, err := l.Lock(ctx, key)
				r.Acquired = mono()
				if err != nil {
					r.Failed = true
					if r.Called >= w.start {
						out = append(out, r)
					}
					if ctx.Err() != nil {
						break
					}
					time.Sleep(time.Millisecond)
					continue
				}
				n := det.enter(key)
				if ld.hold > 0 {
					time.Sleep(ld.hold)
				}
				r.Released = mono()
				n.Add(-1)
				_ = unlock()
				r.Done = mono()
				if r.Called >= w.start {
					out = append(out, r)
				}
				if ld.think > 0 {
					time.Sleep(ld.think)
				}
			}
			per[i] = out
		})
	}
	if onWindow != nil {
		time.Sleep(time.Duration(w.start - mono()))
		onWindow(true)
		time.Sleep(time.Duration(w.end - mono()))
		onWindow(false)
	}
	wg.Wait()
	var all []rec
	for _, p := range per {
		all = append(all, p...)
	}
	return all, w, det.violations.Load()
}

// stats are what the tables report for one run.
type stats struct {
	acq        int     // critical sections acquired inside the window
	rate       float64 // acq per second
	fails      int     // calls started in the window that never got the lock
	pairP50    time.Duration
	pairP99    time.Duration
	waitP50    time.Duration
	waitP99    time.Duration
	waitMax    time.Duration
	gapP50     time.Duration
	gapP99     time.Duration
	gaps       int
	holdMean   time.Duration
	fairMin    int
	fairMax    int
	violations int64 // recorded critical sections that overlap
}

// analyse computes stats from the records of one run (possibly merged from
// several processes). workers lists every worker id, so a worker that never
// got the lock counts as 0 in the fairness columns.
func analyse(recs []rec, w window, workers []int32, oneKey bool) stats {
	var s stats
	counts := map[int32]int{}
	for _, id := range workers {
		counts[id] = 0
	}
	var pairs, waits []time.Duration
	var held []rec
	var holdSum int64
	for _, r := range recs {
		if r.Failed {
			s.fails++
			// A call that never got the lock waited at least this long.
			waits = append(waits, time.Duration(r.Acquired-r.Called))
			continue
		}
		waits = append(waits, time.Duration(r.Acquired-r.Called))
		pairs = append(pairs, time.Duration(r.Done-r.Called))
		held = append(held, r)
		holdSum += r.Released - r.Acquired
		if r.Acquired >= w.start && r.Acquired < w.end {
			s.acq++
			counts[r.Worker]++
		}
	}
	s.rate = float64(s.acq) / (float64(w.end-w.start) / 1e9)
	s.pairP50, s.pairP99 = pct(pairs, 50), pct(pairs, 99)
	s.waitP50, s.waitP99 = pct(waits, 50), pct(waits, 99)
	if len(waits) > 0 {
		s.waitMax = slices.Max(waits)
	}
	if len(held) > 0 {
		s.holdMean = time.Duration(holdSum / int64(len(held)))
	}
	s.fairMin, s.fairMax = -1, 0
	for _, n := range counts {
		if s.fairMin < 0 || n < s.fairMin {
			s.fairMin = n
		}
		s.fairMax = max(s.fairMax, n)
	}
	if !oneKey {
		return s
	}
	// Hand-over gaps and overlaps on the one key.
	slices.SortFunc(held, func(a, b rec) int { return int(a.Acquired - b.Acquired) })
	var gaps []time.Duration
	var lastEnd int64 = -1 << 62
	for i, r := range held {
		if r.Acquired < lastEnd {
			s.violations++
		}
		if i > 0 {
			p := held[i-1]
			// A hand-over: another worker that was already waiting when the
			// previous holder started to release.
			if r.Worker != p.Worker && r.Called < p.Released && r.Acquired >= p.Released {
				gaps = append(gaps, time.Duration(r.Acquired-p.Released))
			}
		}
		lastEnd = max(lastEnd, r.Released)
	}
	s.gaps = len(gaps)
	s.gapP50, s.gapP99 = pct(gaps, 50), pct(gaps, 99)
	return s
}

func pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	d = slices.Clone(d)
	slices.Sort(d)
	i := (len(d)*p + 99) / 100
	if i > 0 {
		i--
	}
	return d[min(i, len(d)-1)]
}
