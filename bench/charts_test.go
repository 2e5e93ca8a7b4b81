package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestCharts draws every chart from rows shaped like a run's and checks
// that each file is a PNG of a size a page can carry.
func TestCharts(t *testing.T) {
	var rep report
	libs := []string{"locktag", "locktag-pooled", "redsync", "redislock", "seed", "set+del"}
	for li, lib := range libs {
		for ci, c := range []int{1, 2, 16, 64} {
			f := float64(1 + li + ci)
			st := stats{rate: 1000 * f, pairP50: time.Duration(f) * 100 * time.Microsecond,
				pairP99: time.Duration(f) * time.Millisecond, waitP50: time.Duration(f) * 200 * time.Microsecond,
				waitP99: time.Duration(f) * 3 * time.Millisecond, gapP50: time.Duration(f) * 50 * time.Microsecond,
				gapP99: time.Duration(f) * 400 * time.Microsecond}
			rep.rows = append(rep.rows, row{scenario: "uncontended", lib: lib, c: c, st: st,
				ratioMed: 0.2 * f, ratioMin: 0.15 * f, ratioMax: 0.3 * f})
			if lib != "set+del" {
				rep.rows = append(rep.rows, row{scenario: "hot", lib: lib, c: c, st: st})
			}
		}
	}
	dir := t.TempDir()
	if d := os.Getenv("BENCH_CHARTS_DIR"); d != "" {
		dir = d // to look at them
	}
	if err := writeCharts(dir, &rep); err != nil {
		t.Fatal(err)
	}
	for _, ch := range charts() {
		b, err := os.ReadFile(filepath.Join(dir, ch.file))
		if err != nil {
			t.Fatal(err)
		}
		if len(b) < 8 || string(b[1:4]) != "PNG" {
			t.Errorf("%s: not a PNG", ch.file)
		}
		if len(b) > 100<<10 {
			t.Errorf("%s: %d bytes, over 100 KiB", ch.file, len(b))
		}
	}
}
