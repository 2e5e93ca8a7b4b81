package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/logtest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/job"
	"github.com/locktag/locktag/locker/redigo"
)

// TestStockReportOneReplica: two replicas (two Lockers on one Redis) run
// the stock report for the same tick; one writes it, the other skips.
func TestStockReportOneReplica(t *testing.T) {
	srv, lk := realRedis(t)
	lk2, err := locker.New(redigo.New(srv.Pool(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk2.Close() })
	db := newStore(0, seedStock)
	a, b := newShop(lk, db), newShop(lk2, db)
	ja, err := a.newStockReport(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := b.newStockReport(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var out logtest.Buffer
	at := time.Now()
	if err := a.stockReport(context.Background(), ja, at, &out); err != nil {
		t.Fatal(err)
	}
	if err := b.stockReport(context.Background(), jb, at, &out); !errors.Is(err, job.ErrSkipped) {
		t.Fatalf("the second replica's report of the same tick: %v, want job.ErrSkipped", err)
	}
	if got := out.String(); strings.Count(got, "stock report") != 1 || !strings.Contains(got, "apple=100 pear=50 plum=10") {
		t.Fatalf("reports:\n%s", got)
	}
}

// TestReportStockLoop: the loop writes a report per tick until its context
// ends.
func TestReportStockLoop(t *testing.T) {
	_, lk := realRedis(t)
	s := newShop(lk, newStore(0, seedStock))
	var out logtest.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.reportStock(ctx, &out, 100*time.Millisecond) }()
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(out.String(), "stock report") < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("no two reports within 10s:\n%s", out.String())
		}
		time.Sleep(5 * time.Millisecond) // polling
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
