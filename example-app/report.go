package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/locktag/locktag/locker/job"
)

// stockReportJob is the lock name of the periodic stock report: every
// replica of the shop schedules the report, and one of them writes it per
// tick.
const stockReportJob = "job:stock-report"

// newStockReport returns the stock report job on the shop's Locker. The
// lock is kept until half a period after each tick (job.WithAtLeast), so a
// replica whose clock or timer runs a little late skips a tick another
// replica has already reported.
func (s *shop) newStockReport(every time.Duration) (*job.Job, error) {
	return job.New(s.lk, stockReportJob, job.WithAtLeast(every/2))
}

// reportStock writes the stock report to out every every, on the ticks of
// the wall clock (so every replica has the same ticks), until ctx ends.
// Only the replica that takes the job's lock for a tick writes; the others
// skip it.
func (s *shop) reportStock(ctx context.Context, out io.Writer, every time.Duration) error {
	j, err := s.newStockReport(every)
	if err != nil {
		return err
	}
	for {
		at := time.Now().Truncate(every).Add(every)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Until(at)):
		}
		if err := s.stockReport(ctx, j, at, out); err != nil && !errors.Is(err, job.ErrSkipped) && ctx.Err() == nil {
			fmt.Fprintln(out, "stock report:", err)
		}
	}
}

// stockReport runs the report job for the tick at: one line with every
// item's stock, and the run's fencing token. It returns an error matching
// job.ErrSkipped when another replica has the tick.
func (s *shop) stockReport(ctx context.Context, j *job.Job, at time.Time, out io.Writer) error {
	return j.RunAt(ctx, at, func(ctx context.Context, token int64) error {
		var b strings.Builder
		for _, it := range s.db.List() {
			fmt.Fprintf(&b, " %s=%d", it.SKU, it.Stock)
		}
		_, err := fmt.Fprintf(out, "stock report %s (fence %d):%s\n", at.Format(time.TimeOnly), token, b.String())
		return err
	})
}
