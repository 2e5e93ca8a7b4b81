package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktag/locktag/locker"
)

// The events watch reports that no notice carries: found by comparing
// what Inspect shows from one poll to the next.
const (
	eventHeld     = "held"     // held when watch started
	eventAcquired = "acquired" // a new holder no grant notice announced
	eventReleased = "released" // a holder gone while its lease had time left
	eventExpired  = "expired"  // a holder gone after its lease ran out: lost
)

// event is one line of watch's output.
type event struct {
	Time time.Time `json:"time"`
	// Event is a notice's (locker.NoticeGrant, NoticeForced, NoticeFree,
	// NoticeDropped, NoticeRecordEnded) or a poll's (held, acquired,
	// released, expired).
	Event string `json:"event"`
	// Source is "notice" (published by a script, told at once) or "poll"
	// (found by Inspect every --interval).
	Source     string   `json:"source"`
	Name       string   `json:"name"`
	Kind       string   `json:"kind,omitempty"`
	Owners     []string `json:"owners,omitempty"`
	Fence      int64    `json:"fence,omitempty"`
	LeaseMs    int64    `json:"leaseMs,omitempty"`
	HeldMs     int64    `json:"heldMs,omitempty"`
	Label      string   `json:"label,omitempty"`
	Mode       string   `json:"mode,omitempty"`
	Reason     string   `json:"reason,omitempty"`
	Subscriber string   `json:"subscriber,omitempty"`
}

func watchCommand() *command {
	var interval time.Duration
	return &command{
		name:  "watch",
		usage: watchUsage,
		flags: func(fs *flag.FlagSet) { fs.DurationVar(&interval, "interval", time.Second, "") },
		args: func(args []string) error {
			if len(args) > 1 {
				return fmt.Errorf("unexpected argument %q", args[1])
			}
			if interval < 0 {
				return fmt.Errorf("--interval %v: want 0 (notices only) or more", interval)
			}
			return nil
		},
		run: func(ctx context.Context, c *cli, s *session, args []string) int {
			arg := ""
			if len(args) == 1 {
				arg = args[0]
			}
			w := &watcher{c: c, s: s, p: parsePattern(arg), interval: interval, holders: map[holderKey]seenHolder{},
				granted: map[holderKey]time.Time{}, forced: map[string]bool{}}
			return w.run(ctx)
		},
	}
}

// holderKey names one holder of one lock.
type holderKey struct{ name, owner string }

// seenHolder is a holder as the last poll saw it, at the start of the
// Inspect call that saw it.
type seenHolder struct {
	kind string
	h    locker.Holder
	at   time.Time
}

// watcher is one watch: the notices it subscribed to, and what its last
// poll saw.
type watcher struct {
	c        *cli
	s        *session
	p        pattern
	interval time.Duration
	holders  map[holderKey]seenHolder
	// granted are the holders a grant notice announced (the next poll
	// does not report them again); forced the owners a force-release
	// notice named.
	granted map[holderKey]time.Time
	forced  map[string]bool
	// refused are names whose records the poll cannot read (warned once).
	refused map[string]bool
	// mu serialises the output of the loop and of receive.
	mu sync.Mutex
}

func (w *watcher) run(ctx context.Context) int {
	ps := w.s.rdb.PSubscribe(ctx, w.s.lk.NoticePattern())
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		if ctx.Err() != nil {
			return exitOK // interrupted while subscribing
		}
		code := w.c.fail("watch", "", err)
		if code == exitRefused {
			fmt.Fprintf(w.c.stderr, "locktag watch: the user needs +psubscribe and the channel rule &%s (the library's ACL rules have the channel)\n", w.s.lk.NoticePattern())
		}
		return code
	}
	// receive ends before run returns: ctx is cancelled first, so that the
	// closed subscription is not taken for a broken one.
	ctx, cancel := context.WithCancel(ctx)
	received := make(chan struct{})
	defer func() { cancel(); _ = ps.Close(); <-received }()
	notices := make(chan locker.Notice, 1024)
	go func() { defer close(received); w.receive(ctx, ps, notices) }()
	snap, err := w.snapshot(ctx)
	switch {
	case ctx.Err() != nil:
		return exitOK
	case err != nil:
		return w.c.fail("watch", "", err)
	}
	now := time.Now()
	for _, k := range sortedKeys(snap) {
		sh := snap[k]
		w.print(holderEvent(now, eventHeld, k.name, sh))
	}
	w.holders = snap
	var tick <-chan time.Time
	if w.interval > 0 {
		t := time.NewTicker(w.interval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return exitOK
		case n := <-notices:
			w.notice(n)
		case <-tick:
			start := time.Now()
			snap, err := w.snapshot(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return exitOK
				}
				w.warn("poll failed (%v); trying again in %v", err, w.interval)
				continue
			}
			// The notices that came during the poll first: a holder a
			// grant announced is not reported again as acquired.
			w.drain(notices)
			w.diff(snap, start, time.Now())
		}
	}
}

// receive reads the subscription until ctx ends, passing on the notices
// the Locker reads. go-redis subscribes again after a broken connection;
// what was published meanwhile is lost, which it says.
func (w *watcher) receive(ctx context.Context, ps *redis.PubSub, out chan<- locker.Notice) {
	broken := false
	for ctx.Err() == nil {
		msg, err := ps.ReceiveTimeout(ctx, 15*time.Second)
		if ctx.Err() != nil {
			return
		}
		var ne net.Error
		switch {
		case err == nil:
		case errors.As(err, &ne) && ne.Timeout():
			_ = ps.Ping(ctx) // a dead connection fails the next receive
			continue
		default:
			if !broken {
				w.warn("subscription broken (%v): notices published until it is back are lost", err)
				broken = true
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Second): // go-redis reconnects on the next receive
			}
			continue
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if broken {
				w.warn("subscription back")
				broken = false
			}
		case *redis.Message:
			if n, ok := w.s.lk.ReadNotice(m.Channel, m.Payload); ok {
				select {
				case out <- n:
				case <-ctx.Done():
					return
				}
			}
		}
	}
}

// drain reports the notices received so far.
func (w *watcher) drain(notices <-chan locker.Notice) {
	for {
		select {
		case n := <-notices:
			w.notice(n)
		default:
			return
		}
	}
}

// notice reports a notice whose lock matches the pattern. A force-release
// notice names owners, not the lock: the last poll knows their lock.
func (w *watcher) notice(n locker.Notice) {
	e := event{Time: time.Now(), Event: n.Event, Source: "notice", Name: n.Name, Kind: n.Kind, Owners: n.Owners,
		Reason: n.Reason, Subscriber: n.Subscriber}
	if n.Event == locker.NoticeForced {
		var names []string
		for _, owner := range n.Owners {
			for k, sh := range w.holders {
				if k.owner == owner {
					w.forced[owner] = true
					e.Kind = sh.kind
					if !slices.Contains(names, k.name) {
						names = append(names, k.name)
					}
				}
			}
		}
		e.Name = strings.Join(names, ",")
		if !slices.ContainsFunc(names, w.p.Match) && (len(names) > 0 || w.p != (pattern{})) {
			return
		}
	} else if !w.p.Match(n.Name) {
		return
	}
	if n.Event == locker.NoticeGrant {
		e.Fence, e.LeaseMs = n.Fence, n.Lease.Milliseconds()
		w.granted[holderKey{n.Name, n.Owners[0]}] = e.Time
	}
	w.print(e)
}

// snapshot is every holder of every lock that matches the pattern.
func (w *watcher) snapshot(ctx context.Context) (map[holderKey]seenHolder, error) {
	var names []string
	for cursor := ""; ; {
		page, next, err := w.s.lk.ListStored(ctx, w.p.prefix, cursor)
		if err != nil {
			return nil, err
		}
		for _, s := range page {
			if s.Kind != locker.KindIdempotency && s.Kind != locker.KindRate && w.p.Match(s.Name) && !slices.Contains(names, s.Name) {
				names = append(names, s.Name)
			}
		}
		if cursor = next; cursor == "" {
			break
		}
	}
	out := map[holderKey]seenHolder{}
	for _, name := range names {
		// The lease left is the server's during the call: timed from
		// before it, a lease is over by before+LeaseLeft at the latest,
		// so a holder gone after its lease ran out is never taken for a
		// release (diff).
		before := time.Now()
		st, err := w.s.lk.Inspect(ctx, name)
		switch {
		case errors.Is(err, locker.ErrProtocol):
			if w.refused == nil {
				w.refused = map[string]bool{}
			}
			if !w.refused[name] {
				w.refused[name] = true
				w.warn("%s: refused: %v", quoteName(name), err)
			}
			continue
		case err != nil:
			return nil, err
		}
		for _, h := range st.Holders {
			out[holderKey{name, h.Owner}] = seenHolder{kind: st.Kind, h: h, at: before}
		}
	}
	return out, nil
}

// diff reports what changed between the last poll and snap, a poll that
// started at start, and keeps snap.
func (w *watcher) diff(snap map[holderKey]seenHolder, start, now time.Time) {
	for _, k := range sortedKeys(w.holders) {
		if _, ok := snap[k]; ok {
			continue
		}
		old := w.holders[k]
		delete(w.granted, k)
		if w.forced[k.owner] {
			delete(w.forced, k.owner) // reported by its notice
			continue
		}
		ev := eventReleased
		if now.Sub(old.at) >= old.h.LeaseLeft {
			ev = eventExpired
		}
		e := holderEvent(now, ev, k.name, old)
		e.HeldMs = (old.h.Held + now.Sub(old.at)).Milliseconds()
		w.print(e)
	}
	for _, k := range sortedKeys(snap) {
		if _, ok := w.holders[k]; ok {
			continue
		}
		if _, ok := w.granted[k]; ok {
			continue
		}
		w.print(holderEvent(now, eventAcquired, k.name, snap[k]))
	}
	for k, at := range w.granted {
		if _, ok := snap[k]; !ok && at.Before(start) {
			delete(w.granted, k) // granted and gone before this poll looked
		}
	}
	w.holders = snap
}

// holderEvent is a poll's event about one holder.
func holderEvent(at time.Time, ev, name string, sh seenHolder) event {
	return event{Time: at, Event: ev, Source: "poll", Name: name, Kind: sh.kind, Owners: []string{sh.h.Owner},
		Fence: sh.h.Fence, LeaseMs: sh.h.LeaseLeft.Milliseconds(), HeldMs: sh.h.Held.Milliseconds(),
		Label: sh.h.Label, Mode: sh.h.Mode}
}

// sortedKeys are m's keys by name, then owner: a poll reports in a
// stable order.
func sortedKeys(m map[holderKey]seenHolder) []holderKey {
	keys := make([]holderKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b holderKey) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		return strings.Compare(a.owner, b.owner)
	})
	return keys
}

// print writes e: a JSON line with -o json, else a text line.
func (w *watcher) print(e event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.c.opts.output == "json" {
		b, _ := json.Marshal(e)
		fmt.Fprintf(w.c.stdout, "%s\n", b)
		return
	}
	var b strings.Builder
	name := clean(e.Name)
	if name == "" {
		name = "?"
	}
	fmt.Fprintf(&b, "%s  %-12s %s", e.Time.Format("2006-01-02T15:04:05.000Z07:00"), e.Event, name)
	if e.Kind != "" {
		fmt.Fprintf(&b, " %s", e.Kind)
	}
	switch e.Event {
	case locker.NoticeForced:
		fmt.Fprintf(&b, " owners=%s reason=%q", strings.Join(e.Owners, ","), e.Reason)
	case locker.NoticeDropped:
		fmt.Fprintf(&b, " subscriber=%s", e.Subscriber)
	case locker.NoticeFree:
	case locker.NoticeRecordEnded:
		fmt.Fprintf(&b, " waiter=%s", strings.Join(e.Owners, ","))
	case locker.NoticeGrant:
		fmt.Fprintf(&b, " owner=%s fence=%d lease=%s", e.Owners[0], e.Fence, duration(ms(e.LeaseMs)))
	case eventReleased, eventExpired:
		fmt.Fprintf(&b, " owner=%s fence=%d held=%s", e.Owners[0], e.Fence, duration(ms(e.HeldMs)))
		if e.Label != "" {
			fmt.Fprintf(&b, " label=%q", e.Label)
		}
	default: // held, acquired
		fmt.Fprintf(&b, " owner=%s fence=%d lease=%s", e.Owners[0], e.Fence, duration(ms(e.LeaseMs)))
		if e.Mode != "" {
			fmt.Fprintf(&b, " mode=%s", e.Mode)
		}
		if e.Label != "" {
			fmt.Fprintf(&b, " label=%q", e.Label)
		}
	}
	fmt.Fprintln(w.c.stdout, b.String())
}

// warn writes a timestamped warning to stderr.
func (w *watcher) warn(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	fmt.Fprintf(w.c.stderr, "%s  locktag watch: %s\n", time.Now().Format("2006-01-02T15:04:05.000Z07:00"), fmt.Sprintf(format, args...))
}
