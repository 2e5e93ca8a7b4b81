package guard

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/logtest"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker"
)

// TestOutageLog: a lock guard logs Redis's unavailability when the outage
// starts, not for every request it refuses; a reminder (with the count)
// once the interval has passed; and one Info record when Redis answers
// again. The control is the count: a guard that logged per request would
// show three records for the first three refusals.
func TestOutageLog(t *testing.T) {
	srv := redistest.Start(t)
	lk := lockerOn(t, srv.Pool(t), locker.WithCallTimeout(300*time.Millisecond))
	logger, rec := logtest.New()
	g, err := CompileLock(lk, `key:"o:{v.id}"`, sources, WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	run := func() Outcome {
		return g.Run(t.Context(), req{"id": "1"}, "POST /o/{id}", func(context.Context) error { return nil })
	}
	if o := run(); o.Kind != OK || len(rec.Records()) != 0 {
		t.Fatalf("healthy: %+v, records:\n%s", o, rec)
	}
	srv.Stop()
	for i := range 3 {
		if o := run(); o.Kind != Unavailable {
			t.Fatalf("refusal %d: %+v", i, o)
		}
	}
	recs := rec.Records()
	if len(recs) != 1 || recs[0].Message != logOutage || recs[0].Level.String() != "ERROR" ||
		recs[0].Attrs["name"] != "POST /o/{id}" || recs[0].Attrs["tag"] != `key:"o:{v.id}"` || recs[0].Attrs["outcome"] != "unavailable" ||
		recs[0].Attrs["error"] == "" {
		t.Fatalf("want one record for three refusals in one outage, got:\n%s", rec)
	}

	// The reminder: due at once with a zero interval; it counts the two
	// refusals since the first record and this one.
	g.outage.mu.Lock()
	g.outage.every = time.Nanosecond
	g.outage.mu.Unlock()
	run()
	if still := rec.Matching(logOutageStill); len(still) != 1 || still[0].Attrs["refused"] != "3" || still[0].Attrs["down_for"] == "" {
		t.Fatalf("want one reminder counting 3 refusals, got:\n%s", rec)
	}

	srv.Restart()
	testwait.Eventually(t, "a request to get the lock after the restart", func() bool { return run().Kind == OK })
	ended := rec.Matching(logOutageEnded)
	if len(ended) != 1 || ended[0].Level.String() != "INFO" || ended[0].Attrs["name"] != "POST /o/{id}" {
		t.Fatalf("want one record of the end of the outage, got:\n%s", rec)
	}
	before := len(rec.Records())
	run()
	if len(rec.Records()) != before {
		t.Fatalf("a healthy request logged:\n%s", rec)
	}

	// A second outage is logged again.
	srv.Stop()
	run()
	if n := len(rec.Matching(logOutage)); n != 2 {
		t.Fatalf("the second outage: %d start records, want 2:\n%s", n, rec)
	}
}

// TestOutageLogConcurrent: requests refused at once, from many goroutines,
// start one outage and write one record.
func TestOutageLogConcurrent(t *testing.T) {
	logger, rec := logtest.New()
	g, err := CompileLock(offline(t), `key:"c:{v.id}"`, sources, WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			if o := g.Run(t.Context(), req{"id": "1"}, "c", nil); o.Kind != Unavailable {
				t.Errorf("%+v", o)
			}
		})
	}
	wg.Wait()
	if n := len(rec.Records()); n != 1 {
		t.Fatalf("16 concurrent refusals wrote %d records, want 1:\n%s", n, rec)
	}
}

// TestOutageLogFailOpen: a fail-open guard logs that requests run without
// their lock, once per outage.
func TestOutageLogFailOpen(t *testing.T) {
	logger, rec := logtest.New()
	g, err := CompileLock(offline(t), `key:"f:{v.id}"`, sources, WithLogger(logger), WithFailOpen())
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if o := g.Run(t.Context(), req{"id": "1"}, "f", func(context.Context) error { return nil }); o.Kind != FailedOpen {
			t.Fatalf("%+v", o)
		}
	}
	if recs := rec.Records(); len(recs) != 1 || recs[0].Message != logOutageOpen || recs[0].Attrs["outcome"] != "failed open" {
		t.Fatalf("want one fail-open record, got:\n%s", rec)
	}
}

// TestIdempotencyOutageLog: an idempotency guard logs an outage once too.
func TestIdempotencyOutageLog(t *testing.T) {
	logger, rec := logtest.New()
	g, err := NewIdempotency[req](offline(t), "T1", WithPublicScope(), WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		o := g.Run(t.Context(), req{}, Request{Route: "POST /pay", Keys: []string{`"k1"`}}, func(context.Context) Answer { return Answer{} })
		if o.Kind != Unavailable {
			t.Fatalf("refusal %d: %+v", i, o)
		}
	}
	if recs := rec.Records(); len(recs) != 1 || recs[0].Message != logOutage || recs[0].Attrs["name"] != "POST /pay" {
		t.Fatalf("want one record, got:\n%s", rec)
	}
}

// TestTagMistakeLoggedOncePerRoute: a tag mistake is a 500 on every
// request, but its record is written once per route.
func TestTagMistakeLoggedOncePerRoute(t *testing.T) {
	logger, rec := logtest.New()
	g, err := CompileLock(offline(t), `key:"k:{v.mistake}"`, sources, WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	for _, route := range []string{"GET /a", "GET /a", "GET /b", "GET /a"} {
		if o := g.Run(t.Context(), req{}, route, nil); o.Kind != TagMistake {
			t.Fatalf("%s: %+v", route, o)
		}
	}
	recs := rec.Matching(logTagMistake)
	if len(recs) != 2 || recs[0].Attrs["route"] != "GET /a" || recs[1].Attrs["route"] != "GET /b" {
		t.Fatalf("want one record per route, got:\n%s", rec)
	}
}

// TestProtocolRefusal: a lock guard that meets a record of another
// protocol refuses the request as Unavailable (even WithFailOpen: another
// release may hold the lock), with ErrProtocol in Outcome.Err, and logs it
// once in words of its own, not as Redis being down.
func TestProtocolRefusal(t *testing.T) {
	srv := redistest.Start(t)
	lk := lockerOn(t, srv.Pool(t))
	if _, err := srv.Do("SET", "locktag:{p:1}", "@2 0 a lock of a later protocol"); err != nil {
		t.Fatal(err)
	}
	for _, open := range []bool{false, true} {
		logger, rec := logtest.New()
		opts := []Option{WithLogger(logger)}
		if open {
			opts = append(opts, WithFailOpen())
		}
		g, err := CompileLock(lk, `key:"p:{v.id}"`, sources, opts...)
		if err != nil {
			t.Fatal(err)
		}
		ran := false
		for range 2 {
			o := g.Run(t.Context(), req{"id": "1"}, "p", func(context.Context) error { ran = true; return nil })
			if o.Kind != Unavailable || !errors.Is(o.Err, locker.ErrProtocol) {
				t.Fatalf("fail-open %v: %+v", open, o)
			}
		}
		if ran {
			t.Fatalf("fail-open %v: the call ran", open)
		}
		if recs := rec.Records(); len(recs) != 1 || recs[0].Message != logProtocol || recs[0].Level.String() != "ERROR" {
			t.Fatalf("fail-open %v: want one protocol record, got:\n%s", open, rec)
		}
	}
}
