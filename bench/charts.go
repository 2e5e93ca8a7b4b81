package main

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// chart is one PNG: x = workers (c), one line per library (two when the
// chart shows a p99 and a p50).
type chart struct {
	file, scenario, title, ylabel string
	logY                          bool
	// series gives each line's value for a row; the first is solid, a
	// second is dashed. Values <= 0 on a log axis are skipped.
	series []func(r row) float64
	// spread, if set, gives a row's range (error bar) around the value.
	spread func(r row) (lo, hi float64, ok bool)
	// skip leaves a library out (the baseline of a ratio chart).
	skip string
	// refLine draws a horizontal reference at this value (0: none).
	refLine float64
	// seriesNames label the solid and dashed lines in the legend.
	seriesNames []string
}

// libStyle is each library's colour, fixed so that a library looks the
// same in every chart; locktag's lines are the thickest.
var libStyle = map[string]color.RGBA{
	"locktag":          {R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	"locktag-pooled":   {R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	"locktag-1conn":    {R: 0xbc, G: 0xbd, B: 0x22, A: 0xff},
	"locktag-goredis":  {R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
	"locktag-rueidis":  {R: 0xe3, G: 0x77, B: 0xc2, A: 0xff},
	"redsync":          {R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	"redislock":        {R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	"rueidislock":      {R: 0x17, G: 0xbe, B: 0xcf, A: 0xff},
	"seed":             {R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	"set+del":          {R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff},
	"locktag-redlock5": {R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	"redsync-redlock5": {R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
}

func charts() []chart {
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	return []chart{
		{file: "load-uncontended-ratio.png", scenario: "uncontended",
			title:  "Uncontended: lock+unlock pairs/s ÷ set+del's in the same round (median, range)",
			ylabel: "× set+del (higher is better)", skip: "set+del", refLine: 1,
			series: []func(row) float64{func(r row) float64 { return r.ratioMed }},
			spread: func(r row) (float64, float64, bool) { return r.ratioMin, r.ratioMax, r.ratioMed > 0 }},
		{file: "load-uncontended-throughput.png", scenario: "uncontended",
			title:  "Uncontended: lock+unlock pairs per second, each worker on its own key",
			ylabel: "pairs/s (higher is better)",
			series: []func(row) float64{func(r row) float64 { return r.st.rate }}},
		{file: "load-uncontended-latency.png", scenario: "uncontended",
			title:  "Uncontended: one lock+unlock pair, milliseconds (log scale)",
			ylabel: "ms (lower is better)", logY: true, seriesNames: []string{"p99", "p50"},
			series: []func(row) float64{
				func(r row) float64 { return ms(r.st.pairP99) },
				func(r row) float64 { return ms(r.st.pairP50) }}},
		{file: "load-hot-throughput.png", scenario: "hot",
			title:  "Hot key: critical sections per second (hold 1 ms, think 5 ms)",
			ylabel: "CS/s (higher is better)",
			series: []func(row) float64{func(r row) float64 { return r.st.rate }}},
		{file: "load-hot-wait.png", scenario: "hot",
			title:  "Hot key: wait for the lock, milliseconds (log scale)",
			ylabel: "ms (lower is better)", logY: true, seriesNames: []string{"p99", "p50"},
			series: []func(row) float64{
				func(r row) float64 { return ms(r.st.waitP99) },
				func(r row) float64 { return ms(r.st.waitP50) }}},
		{file: "load-hot-handoff.png", scenario: "hot",
			title:  "Hot key: hand-over, release to the next holder, milliseconds (log scale)",
			ylabel: "ms (lower is better)", logY: true, seriesNames: []string{"p99", "p50"},
			series: []func(row) float64{
				func(r row) float64 { return ms(r.st.gapP99) },
				func(r row) float64 { return ms(r.st.gapP50) }}},
	}
}

// writeCharts writes the charts of the uncontended and hot-key scenarios
// that ran, from the same rows as the tables.
func writeCharts(dir string, rep *report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, ch := range charts() {
		if err := writeChart(filepath.Join(dir, ch.file), ch, rep.rows); err != nil {
			return fmt.Errorf("%s: %w", ch.file, err)
		}
	}
	return nil
}

func writeChart(path string, ch chart, rows []row) error {
	var libs []string
	var cs []float64
	found := false
	for _, r := range rows {
		if r.scenario != ch.scenario || r.lib == ch.skip {
			continue
		}
		if !slices.Contains(libs, r.lib) {
			libs = append(libs, r.lib)
		}
		if !slices.Contains(cs, float64(r.c)) {
			cs = append(cs, float64(r.c))
		}
		if ch.series[0](r) > 0 {
			found = true
		}
	}
	if !found {
		return nil // the scenario did not run, or (ratios) had one round
	}
	slices.Sort(cs)

	p := plot.New()
	p.Title.Text = ch.title
	p.Title.TextStyle.Font.Size = vg.Points(11)
	p.Title.Padding = vg.Points(6)
	p.X.Label.Text = "workers (c), log scale"
	p.Y.Label.Text = ch.ylabel
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font.Size = vg.Points(10)
		a.Tick.Label.Font.Size = vg.Points(9)
	}
	p.X.Scale = plot.LogScale{}
	var ticks []plot.Tick
	for _, c := range cs {
		ticks = append(ticks, plot.Tick{Value: c, Label: strconv.Itoa(int(c))})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Padding = vg.Points(8)
	if ch.logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.TickerFunc(decadeTicks)
	} else {
		p.Y.Tick.Marker = plot.TickerFunc(readableTicks)
	}
	p.Add(plotter.NewGrid())

	leg := plot.NewLegend()
	leg.TextStyle.Font.Size = vg.Points(9)
	leg.Top, leg.Left = true, true
	leg.Padding = vg.Points(2)
	leg.ThumbnailWidth = vg.Points(22)
	for li, lib := range libs {
		// With error bars, each library's points sit a little apart on
		// the log x axis, so that the bars do not cover each other.
		dodge := 1.0
		if ch.spread != nil {
			dodge = math.Pow(1.06, float64(li)-float64(len(libs)-1)/2)
		}
		col := libStyle[lib]
		if col.A == 0 {
			col = color.RGBA{A: 0xff}
		}
		width := vg.Points(1.5)
		if lib == "locktag" || lib == "locktag-redlock5" {
			width = vg.Points(2.5)
		}
		for si, sf := range ch.series {
			var pts plotter.XYs
			var errs plotter.YErrors
			for _, r := range rows {
				if r.scenario != ch.scenario || r.lib != lib {
					continue
				}
				v := sf(r)
				if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
					continue
				}
				pts = append(pts, plotter.XY{X: float64(r.c) * dodge, Y: v})
				if ch.spread != nil && si == 0 {
					lo, hi, ok := ch.spread(r)
					if !ok {
						lo, hi = v, v
					}
					errs = append(errs, struct{ Low, High float64 }{v - lo, hi - v})
				}
			}
			if len(pts) == 0 {
				continue
			}
			order := make([]int, len(pts))
			for i := range order {
				order[i] = i
			}
			slices.SortFunc(order, func(a, b int) int { return int(pts[a].X - pts[b].X) })
			sp := make(plotter.XYs, len(pts))
			var se plotter.YErrors
			for i, j := range order {
				sp[i] = pts[j]
				if errs != nil {
					se = append(se, errs[j])
				}
			}
			l, s, err := plotter.NewLinePoints(sp)
			if err != nil {
				return err
			}
			l.Color, s.Color = col, col
			l.Width = width
			s.Shape = draw.CircleGlyph{}
			s.Radius = vg.Points(2.5)
			if si > 0 {
				l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
				l.Width = vg.Points(1)
				s.Radius = vg.Points(1.8)
			} else {
				leg.Add(lib, l, s)
			}
			if se != nil {
				eb, err := plotter.NewYErrorBars(struct {
					plotter.XYs
					plotter.YErrors
				}{sp, se})
				if err != nil {
					return err
				}
				eb.Color = col
				eb.Width = vg.Points(1)
				eb.CapWidth = vg.Points(5)
				p.Add(eb)
			}
			p.Add(l, s)
		}
	}
	if ch.refLine > 0 {
		ref := plotter.NewFunction(func(float64) float64 { return ch.refLine })
		ref.Color = libStyle["set+del"]
		ref.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
		ref.Width = vg.Points(1.2)
		p.Add(ref)
		leg.Add("set+del = 1", ref)
		p.Y.Min = min(p.Y.Min, 0)
	}
	if len(ch.series) > 1 {
		// The line styles: the solid line and the dashed one.
		solid := &plotter.Line{LineStyle: draw.LineStyle{Color: color.Black, Width: vg.Points(1.5)}}
		dashed := &plotter.Line{LineStyle: draw.LineStyle{Color: color.Black, Width: vg.Points(1),
			Dashes: []vg.Length{vg.Points(4), vg.Points(3)}}}
		leg.Add("")
		leg.Add(ch.seriesNames[0]+" (solid)", solid)
		leg.Add(ch.seriesNames[1]+" (dashed)", dashed)
	}
	if ch.logY {
		// Whole decades, so that both ends carry a label.
		p.Y.Min = math.Pow(10, math.Floor(math.Log10(p.Y.Min)))
		p.Y.Max = math.Pow(10, math.Ceil(math.Log10(p.Y.Max)))
	} else {
		p.Y.Min = 0
		p.Y.Max *= 1.08
	}

	const dpi = 96
	w, h := 7.2*vg.Inch, 3.6*vg.Inch
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(dpi))
	dc := draw.New(img)
	legW := 1.45 * vg.Inch
	p.Draw(draw.Crop(dc, 0, -legW, 0, 0))
	// The legend beside the plot, below the title's height, so it
	// covers no line.
	top := p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y + 2*p.Title.Padding
	leg.Draw(draw.Crop(dc, w-legW+vg.Points(8), 0, 0, -top))

	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// readableTicks are about five evenly spaced labelled ticks, a step of
// 1, 2, 2.5 or 5 times a power of ten, labelled as a reader takes them in
// at a glance: 25k, not 25000.00.
func readableTicks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return []plot.Tick{{Value: lo, Label: label(lo)}}
	}
	raw := (hi - lo) / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * mag
	for _, m := range []float64{1, 2, 2.5, 5} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var ticks []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9; v += step {
		v = math.Round(v/step) * step
		ticks = append(ticks, plot.Tick{Value: v, Label: label(v)})
		if half := v + step/2; half < hi {
			ticks = append(ticks, plot.Tick{Value: half}) // minor
		}
	}
	return ticks
}

// decadeTicks label every power of ten between lo and hi, with minor ticks
// at 2…9 times each.
func decadeTicks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		d := math.Pow(10, e)
		if d >= lo*(1-1e-9) && d <= hi*(1+1e-9) {
			ticks = append(ticks, plot.Tick{Value: d, Label: label(d)})
		}
		for m := 2.0; m < 10; m++ {
			if v := m * d; v > lo && v < hi {
				ticks = append(ticks, plot.Tick{Value: v})
			}
		}
	}
	return ticks
}

func label(v float64) string {
	if math.Abs(v) >= 1000 {
		return strconv.FormatFloat(v/1000, 'g', 4, 64) + "k"
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}
