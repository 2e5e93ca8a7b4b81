package guard

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/internal/logtest"
	"github.com/locktag/locktag/internal/obstest"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/redigo"
)

// mistakeEvents returns obs's tag_mistake events.
func mistakeEvents(obs *obstest.Recorder) []string {
	var out []string
	for _, e := range obs.Events() {
		if strings.HasPrefix(e, "tag_mistake ") {
			out = append(out, e)
		}
	}
	return out
}

// TestTagMistakeNotReady: a tag mistake found at request time is logged
// once per route, naming the tag, the route and the fix; every refused
// request is reported to the Locker's Observer (the metric); and from the
// first, the Locker's Health is not serving (ReasonMisconfigured), without
// a Redis call, and says so once. A Locker whose guards found none, and a
// correct guard's requests, are not flagged.
func TestTagMistakeNotReady(t *testing.T) {
	srv := redistest.Start(t)
	obs := &obstest.Recorder{}
	lk := lockerOn(t, srv.Pool(t), locker.WithObserver(obs))
	other := lockerOn(t, srv.Pool(t))
	logger, rec := logtest.New()
	healthLog, healthRec := logtest.New()
	h := NewHealth(lk, time.Second, healthLog)
	ctx := t.Context()

	good, err := CompileLock(lk, `key:"k:{v.id}"`, sources, WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	if o := good.Run(ctx, req{"id": "1"}, "POST /items/:id", func(context.Context) error { return nil }); o.Kind != OK {
		t.Fatalf("a correct guard: %+v", o)
	}
	if r := h.Check(ctx); r != "" || len(Mistakes(lk)) != 0 || len(mistakeEvents(obs)) != 0 {
		t.Fatalf("before any mistake: health %q, mistakes %v, events %v", r, Mistakes(lk), mistakeEvents(obs))
	}

	bad, err := CompileLock(lk, `key:"k:{v.mistake}"`, sources, WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if o := bad.Run(ctx, req{}, "POST /items/:name", nil); o.Kind != TagMistake {
			t.Fatalf("%+v", o)
		}
	}
	recs := rec.Matching(logTagMistake)
	if len(recs) != 1 || recs[0].Level != slog.LevelError || recs[0].Attrs["tag"] != `key:"k:{v.mistake}"` ||
		recs[0].Attrs["route"] != "POST /items/:name" || !strings.Contains(recs[0].Message, "docs/routes.md") {
		t.Fatalf("want one Error record naming tag, route and the fix, got:\n%s", rec)
	}
	if ev := mistakeEvents(obs); len(ev) != 3 || ev[0] != "tag_mistake name=POST /items/:name template=k:{v.mistake} route=POST /items/:name" {
		t.Fatalf("Observer events: %q, want 3 naming the route and the template", ev)
	}
	ms := Mistakes(lk)
	if len(ms) != 1 || ms[0].Route != "POST /items/:name" || ms[0].Tag != `key:"k:{v.mistake}"` {
		t.Fatalf("Mistakes: %+v", ms)
	}

	srv.Stop() // no Redis call: misconfigured wins
	for range 2 {
		if r := h.Check(ctx); r != ReasonMisconfigured {
			t.Fatalf("health after the mistake: %q, want %q", r, ReasonMisconfigured)
		}
	}
	if hr := healthRec.Records(); len(hr) != 1 || hr[0].Level != slog.LevelWarn || hr[0].Attrs["reason"] != ReasonMisconfigured ||
		!strings.Contains(hr[0].Attrs["error"], "POST /items/:name") {
		t.Fatalf("health records: %s", healthRec)
	}
	if len(Mistakes(other)) != 0 {
		t.Fatalf("another Locker's mistakes: %v", Mistakes(other))
	}
}

// TestMistakesKeepNoLocker: the record of a Locker's mistakes does not
// keep the Locker: a closed and dropped Locker's entry goes.
func TestMistakesKeepNoLocker(t *testing.T) {
	entries := func() int {
		mistakes.mu.Lock()
		defer mistakes.mu.Unlock()
		return len(mistakes.m)
	}
	before := entries()
	func() {
		lk, err := locker.New(redigo.New(&redis.Pool{Dial: func() (redis.Conn, error) { return nil, errors.New("never dialled") }}))
		if err != nil {
			t.Fatal(err)
		}
		defer lk.Close()
		g, err := CompileLock(lk, `key:"k:{v.mistake}"`, sources, WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			t.Fatal(err)
		}
		g.Run(t.Context(), req{}, "GET /a", nil)
		if entries() != before+1 {
			t.Fatal("the mistake was not recorded")
		}
	}()
	testwait.Eventually(t, "the dropped Locker's entry to go", func() bool {
		runtime.GC()
		return entries() <= before
	})
}

// TestTagMistakeAfterWindow: a tag mistake found later than MistakeWindow
// after the process started is logged and listed, but leaves Health
// serving: a fleet long in service is not taken out at once.
func TestTagMistakeAfterWindow(t *testing.T) {
	srv := redistest.Start(t)
	lk := lockerOn(t, srv.Pool(t))
	h := NewHealth(lk, time.Second, slog.New(slog.DiscardHandler))
	was := started
	started = time.Now().Add(-MistakeWindow - time.Minute)
	t.Cleanup(func() { started = was })
	logger, rec := logtest.New()
	bad, err := CompileLock(lk, `key:"k:{v.mistake}"`, sources, WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	if o := bad.Run(t.Context(), req{}, "POST /late", func(context.Context) error { return nil }); o.Kind != TagMistake {
		t.Fatalf("%+v, want TagMistake", o)
	}
	if len(Mistakes(lk)) != 1 || len(rec.Matching("lock tag names something")) != 1 {
		t.Fatalf("mistakes %v, log:\n%s", Mistakes(lk), rec)
	}
	if r := h.Check(t.Context()); r != "" {
		t.Fatalf("health %q after the window, want serving", r)
	}
}
