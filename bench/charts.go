package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// writeCharts writes one throughput and one latency chart per contention
// scenario, x = workers (c), one line per library.
func writeCharts(dir string, rep *report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	charts := []struct {
		file, scenario, title, ylabel string
		logY                          bool
		series                        []func(r row) (string, float64) // label suffix, value
	}{
		{"load-uncontended-throughput.png", "uncontended", "Uncontended: lock+unlock pairs/s (own key per worker)", "pairs/s", false,
			[]func(row) (string, float64){func(r row) (string, float64) { return "", r.st.rate }}},
		{"load-uncontended-latency.png", "uncontended", "Uncontended: lock+unlock latency, p50 (dashed) and p99", "ms", true,
			[]func(row) (string, float64){
				func(r row) (string, float64) { return " p99", ms(r.st.pairP99) },
				func(r row) (string, float64) { return " p50", ms(r.st.pairP50) }}},
		{"load-hot-throughput.png", "hot", "Hot key: critical sections/s (hold 1ms, think 5ms)", "CS/s", false,
			[]func(row) (string, float64){func(r row) (string, float64) { return "", r.st.rate }}},
		{"load-hot-wait.png", "hot", "Hot key: wait for the lock, p50 (dashed) and p99", "ms", true,
			[]func(row) (string, float64){
				func(r row) (string, float64) { return " p99", ms(r.st.waitP99) },
				func(r row) (string, float64) { return " p50", ms(r.st.waitP50) }}},
		{"load-hot-handoff.png", "hot", "Hot key: hand-over gap (release to next holder), p50 (dashed) and p99", "ms", true,
			[]func(row) (string, float64){
				func(r row) (string, float64) { return " p99", ms(r.st.gapP99) },
				func(r row) (string, float64) { return " p50", ms(r.st.gapP50) }}},
	}
	for _, ch := range charts {
		var libs []string
		var cs []float64
		for _, r := range rep.rows {
			if r.scenario != ch.scenario {
				continue
			}
			if !slices.Contains(libs, r.lib) {
				libs = append(libs, r.lib)
			}
			if !slices.Contains(cs, float64(r.c)) {
				cs = append(cs, float64(r.c))
			}
		}
		if len(libs) == 0 {
			continue
		}
		slices.Sort(cs)
		p := plot.New()
		p.Title.Text = ch.title
		p.Title.TextStyle.Font.Size = vg.Points(10)
		p.X.Label.Text = "workers (c)"
		p.Y.Label.Text = ch.ylabel
		p.X.Scale = plot.LogScale{}
		var ticks []plot.Tick
		for _, c := range cs {
			ticks = append(ticks, plot.Tick{Value: c, Label: strconv.Itoa(int(c))})
		}
		p.X.Tick.Marker = plot.ConstantTicks(ticks)
		if ch.logY {
			p.Y.Scale = plot.LogScale{}
			p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		}
		p.Legend.Top = true
		p.Legend.Left = true
		p.Legend.TextStyle.Font.Size = vg.Points(8)
		p.Add(plotter.NewGrid())
		for li, lib := range libs {
			for si, sf := range ch.series {
				var pts plotter.XYs
				label := ""
				for _, r := range rep.rows {
					if r.scenario != ch.scenario || r.lib != lib {
						continue
					}
					suffix, v := sf(r)
					if ch.logY && v <= 0 {
						continue
					}
					label = lib + suffix
					pts = append(pts, plotter.XY{X: float64(r.c), Y: v})
				}
				if len(pts) == 0 {
					continue
				}
				slices.SortFunc(pts, func(a, b plotter.XY) int { return int(a.X - b.X) })
				l, s, err := plotter.NewLinePoints(pts)
				if err != nil {
					return err
				}
				col := plotutil.Color(li)
				l.Color, s.Color = col, col
				l.Width = vg.Points(1.5)
				s.Shape = draw.CircleGlyph{}
				if si > 0 {
					l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
					l.Width = vg.Points(1)
				} else {
					p.Legend.Add(lib, l, s)
				}
				_ = label
				p.Add(l, s)
			}
		}
		// Head room above the lines for the legend.
		if ch.logY {
			p.Y.Max *= 6
		} else {
			p.Y.Min = 0
			p.Y.Max *= 1.3
		}
		c := vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(6*vg.Inch, 3.4*vg.Inch), vgimg.UseDPI(96))}
		p.Draw(draw.New(c))
		f, err := os.Create(filepath.Join(dir, ch.file))
		if err != nil {
			return err
		}
		if _, err := c.WriteTo(f); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("%s: %w", ch.file, err)
		}
	}
	return nil
}
