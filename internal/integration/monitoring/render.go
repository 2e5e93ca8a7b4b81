package monitoring

import (
	"context"
	"fmt"
	"html"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// PanelData is what a panel's queries returned over a time range.
type PanelData struct {
	Panel  Panel
	Series []NamedSeries
	Err    error // the first query that failed
}

// NamedSeries is a query result series with its legend name.
type NamedSeries struct {
	Name    string
	RefID   string
	Labels  map[string]string
	Samples []Sample
}

// Range is a query_range window with the template variables' values.
type Range struct {
	Start, End time.Time
	Step       time.Duration
	Vars       map[string]string // e.g. lock: ".*", __rate_interval: "15s"
}

// Fetch runs every panel's queries over r.
func Fetch(ctx context.Context, c *Client, d *Dashboard, r Range) []PanelData {
	out := make([]PanelData, 0, len(d.Panels))
	for _, p := range d.Panels {
		pd := PanelData{Panel: p}
		for _, t := range p.Targets {
			expr, err := Expand(t.Expr, r.Vars)
			if err == nil {
				var ss []Series
				ss, err = c.QueryRange(ctx, expr, r.Start, r.End, r.Step)
				for _, s := range ss {
					pd.Series = append(pd.Series, NamedSeries{Name: Legend(t.LegendFormat, s.Labels), RefID: t.RefID, Labels: s.Labels, Samples: s.Samples})
				}
			}
			if err != nil && pd.Err == nil {
				pd.Err = fmt.Errorf("panel %q target %s: %w", p.Title, t.RefID, err)
			}
		}
		sort.SliceStable(pd.Series, func(i, j int) bool {
			if pd.Series[i].RefID != pd.Series[j].RefID {
				return pd.Series[i].RefID < pd.Series[j].RefID
			}
			return pd.Series[i].Name < pd.Series[j].Name
		})
		out = append(out, pd)
	}
	return out
}

// Layout of the rendered page: Grafana's 24-column grid at a fixed width.
const (
	pageWidth = 1400
	rowHeight = 26 // Grafana's is 30; 26 fits the default layout in 1000 pixels
	pagePad   = 10
	headerH   = 52
	gap       = 6
)

// PageHeight is the height in pixels of the page HTML renders for d.
func PageHeight(d *Dashboard) int {
	rows := 0
	for _, p := range d.Panels {
		rows = max(rows, p.GridPos.Y+p.GridPos.H)
	}
	return headerH + rows*rowHeight + 2*pagePad
}

// palette is Grafana's classic series palette.
var palette = []string{"#7EB26D", "#EAB839", "#6ED0E0", "#EF843C", "#E24D42", "#1F78C1", "#BA43A9", "#705DA0", "#508642", "#CCA300", "#447EBC", "#C15C17"}

// HTML renders the panels as a static page: one absolutely placed box
// per panel at its grid position, time series as inline SVG lines (bars
// for drawStyle "bars"), stats as their last value over a sparkline.
// note is printed under the title (what data this is).
func HTML(d *Dashboard, data []PanelData, r Range, note string) []byte {
	var b strings.Builder
	colW := float64(pageWidth-2*pagePad) / 24
	fmt.Fprintf(&b, `<!doctype html><html><head><meta charset="utf-8"><title>%s</title><style>
body{margin:0;background:#111217;color:#ccccdc;font:12px/1.3 -apple-system,"Segoe UI",Roboto,"DejaVu Sans",Helvetica,Arial,sans-serif;width:%dpx;height:%dpx;position:relative;overflow:hidden}
.hdr{position:absolute;left:%dpx;top:8px;right:%dpx;height:%dpx}
.hdr h1{font-size:18px;font-weight:500;margin:0 0 4px;color:#d8d9da}
.hdr .vars span{display:inline-block;background:#22252b;border:1px solid #2c3235;border-radius:2px;padding:1px 6px;margin-right:6px;color:#ccccdc}
.hdr .note{position:absolute;right:0;top:2px;color:#8e8e8e;text-align:right}
.p{position:absolute;background:#181b1f;border:1px solid #2c3235;border-radius:3px;box-sizing:border-box;overflow:hidden}
.p h2{font-size:13px;font-weight:500;margin:6px 8px 0;color:#d8d9da;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.p svg{position:absolute;left:0;top:24px}
.lg{position:absolute;left:8px;right:8px;bottom:4px;font-size:10.5px;color:#aaa;white-space:nowrap;overflow:hidden}
.lg i{display:inline-block;width:10px;height:3px;margin:0 4px 2px 0;vertical-align:middle}
.lg b{font-weight:normal;margin-right:10px}
.stat{position:absolute;left:0;right:0;top:26px;text-align:center;font-size:30px;font-weight:500}
.err{color:#E24D42;margin:8px}
</style></head><body>`, html.EscapeString(d.Title), pageWidth, PageHeight(d), pagePad, pagePad, headerH)
	fmt.Fprintf(&b, `<div class="hdr"><h1>%s</h1><div class="vars">`, html.EscapeString(d.Title))
	for _, v := range d.Templating.List {
		if v.Type == "datasource" {
			b.WriteString(`<span>Prometheus</span>`)
			continue
		}
		val := r.Vars[v.Name]
		if val == v.AllValue && v.IncludeAll {
			val = "All"
		}
		fmt.Fprintf(&b, `<span>%s: %s</span>`, html.EscapeString(v.Name), html.EscapeString(val))
	}
	fmt.Fprintf(&b, `</div><div class="note">%s → %s (%s)<br>%s</div></div>`,
		r.Start.Format("15:04:05"), r.End.Format("15:04:05"), r.End.Sub(r.Start).Round(time.Second), html.EscapeString(note))
	for _, pd := range data {
		p := pd.Panel
		x := float64(pagePad) + float64(p.GridPos.X)*colW
		y := float64(headerH + pagePad + p.GridPos.Y*rowHeight)
		w := float64(p.GridPos.W)*colW - gap
		h := float64(p.GridPos.H*rowHeight) - gap
		fmt.Fprintf(&b, `<div class="p" style="left:%.0fpx;top:%.0fpx;width:%.0fpx;height:%.0fpx"><h2>%s</h2>`, x, y, w, h, html.EscapeString(p.Title))
		switch {
		case pd.Err != nil:
			fmt.Fprintf(&b, `<div class="err">%s</div>`, html.EscapeString(pd.Err.Error()))
		case len(pd.Series) == 0:
			b.WriteString(`<div class="err">No data</div>`)
		case p.Type == "stat":
			stat(&b, pd, r, w, h)
		default:
			chart(&b, pd, r, w, h)
		}
		b.WriteString(`</div>`)
	}
	b.WriteString("</body></html>\n")
	return []byte(b.String())
}

// stat draws the last value of the first series, coloured by the
// panel's thresholds, over its sparkline.
func stat(b *strings.Builder, pd PanelData, r Range, w, h float64) {
	s := pd.Series[0]
	last := math.NaN()
	for _, smp := range s.Samples {
		if !math.IsNaN(smp.V) && !math.IsInf(smp.V, 0) {
			last = smp.V
		}
	}
	color := "#73BF69"
	if th := pd.Panel.FieldConfig.Defaults.Thresholds; th != nil {
		for _, st := range th.Steps {
			if st.Value == nil || last >= *st.Value {
				color = grafanaColor(st.Color)
			}
		}
	}
	unit := pd.Panel.FieldConfig.Defaults.Unit
	ch := h - 24
	hi := maxOf([]NamedSeries{s})
	fmt.Fprintf(b, `<svg width="%.0f" height="%.0f">`, w, ch)
	if pts := points(s.Samples, r, 0, ch*0.45, w, ch, 0, hi); len(pts) > 0 {
		for _, seg := range pts {
			area := fmt.Sprintf("%.1f,%.1f %s %.1f,%.1f", seg[0][0], ch, polyline(seg), seg[len(seg)-1][0], ch)
			fmt.Fprintf(b, `<polygon points="%s" fill="%s" fill-opacity="0.18"/><polyline points="%s" fill="none" stroke="%s" stroke-width="1.2"/>`, area, color, polyline(seg), color)
		}
	}
	b.WriteString(`</svg>`)
	fmt.Fprintf(b, `<div class="stat" style="color:%s">%s</div>`, color, html.EscapeString(format(last, unit, true)))
}

// chart draws a time series panel: axes, grid, one line (or bars) per
// series, a legend.
func chart(b *strings.Builder, pd PanelData, r Range, w, h float64) {
	unit := pd.Panel.FieldConfig.Defaults.Unit
	bars := pd.Panel.FieldConfig.Defaults.Custom.DrawStyle == "bars"
	// The legend wraps like Grafana's list legend: up to three rows.
	var rowOf []int
	legendRows, used := 1, 0.0
	for _, s := range pd.Series {
		sw := 6.6*float64(len([]rune(s.Name))) + 24
		if used > 0 && used+sw > w-16 && legendRows < 3 {
			legendRows++
			used = 0
		}
		used += sw
		rowOf = append(rowOf, legendRows)
	}
	ch := h - 24 - float64(legendRows)*13 - 4
	left, bottom := 52.0, 16.0
	hi := niceMax(maxOf(pd.Series))
	fmt.Fprintf(b, `<svg width="%.0f" height="%.0f" font-size="10" fill="#9a9a9a">`, w, ch)
	// Horizontal grid and y labels: 0, hi/2, hi.
	for i := 0; i <= 2; i++ {
		v := hi * float64(i) / 2
		y := (ch - bottom) - (ch-bottom-6)*float64(i)/2
		fmt.Fprintf(b, `<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#2c3235"/>`, left, w-8, y, y)
		fmt.Fprintf(b, `<text x="%.0f" y="%.1f" text-anchor="end">%s</text>`, left-4, y+3, html.EscapeString(format(v, unit, false)))
	}
	// Time labels.
	span := r.End.Sub(r.Start)
	for i := 0; i <= 4; i++ {
		t := r.Start.Add(span * time.Duration(i) / 4)
		x := left + (w-8-left)*float64(i)/4
		anchor := "middle"
		switch i {
		case 0:
			anchor = "start"
		case 4:
			anchor = "end"
		}
		fmt.Fprintf(b, `<text x="%.0f" y="%.0f" text-anchor="%s">%s</text>`, x, ch-3, anchor, t.Format("15:04:05"))
	}
	for i, s := range pd.Series {
		color := palette[i%len(palette)]
		segs := points(s.Samples, r, left, 6, w-8, ch-bottom, 0, hi)
		if bars {
			bw := max((w-8-left)*r.Step.Seconds()/span.Seconds()-1, 1)
			for _, seg := range segs {
				for _, pt := range seg {
					if pt[1] < ch-bottom {
						fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" fill-opacity="0.8"/>`, pt[0]-bw/2, pt[1], bw, ch-bottom-pt[1], color)
					}
				}
			}
			continue
		}
		for _, seg := range segs {
			if len(seg) == 1 {
				fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="1.5" fill="%s"/>`, seg[0][0], seg[0][1], color)
				continue
			}
			fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="1.3"/>`, polyline(seg), color)
		}
	}
	b.WriteString(`</svg><div class="lg">`)
	for i, s := range pd.Series {
		if i > 0 && rowOf[i] != rowOf[i-1] {
			b.WriteString(`<br>`)
		}
		fmt.Fprintf(b, `<b><i style="background:%s"></i>%s</b>`, palette[i%len(palette)], html.EscapeString(s.Name))
	}
	b.WriteString(`</div>`)
}

// points maps samples into the box (x0,y0)-(x1,y1) for values lo..hi,
// split where a value is missing (NaN, ±Inf or a gap of more than two
// steps), as Grafana breaks a line.
func points(samples []Sample, r Range, x0, y0, x1, y1, lo, hi float64) [][][2]float64 {
	if hi <= lo {
		hi = lo + 1
	}
	span := r.End.Sub(r.Start).Seconds()
	var segs [][][2]float64
	var cur [][2]float64
	var prev time.Time
	for _, s := range samples {
		if math.IsNaN(s.V) || math.IsInf(s.V, 0) || (!prev.IsZero() && s.T.Sub(prev) > 2*r.Step) {
			if len(cur) > 0 {
				segs = append(segs, cur)
			}
			cur = nil
		}
		prev = s.T
		if math.IsNaN(s.V) || math.IsInf(s.V, 0) {
			continue
		}
		x := x0 + (x1-x0)*s.T.Sub(r.Start).Seconds()/span
		y := y1 - (y1-y0)*(min(s.V, hi)-lo)/(hi-lo)
		cur = append(cur, [2]float64{x, y})
	}
	if len(cur) > 0 {
		segs = append(segs, cur)
	}
	return segs
}

func polyline(seg [][2]float64) string {
	var b strings.Builder
	for i, p := range seg {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%.1f,%.1f", p[0], p[1])
	}
	return b.String()
}

func maxOf(ss []NamedSeries) float64 {
	hi := 0.0
	for _, s := range ss {
		for _, smp := range s.Samples {
			if !math.IsNaN(smp.V) && !math.IsInf(smp.V, 0) {
				hi = max(hi, smp.V)
			}
		}
	}
	return hi
}

// niceMax rounds v up to 1, 2 or 5 times a power of ten.
func niceMax(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// format writes v in the panel's unit, as Grafana would roughly.
func format(v float64, unit string, big bool) string {
	if math.IsNaN(v) {
		return "No data"
	}
	num := func(f float64) string {
		switch {
		case f == math.Trunc(f) && math.Abs(f) < 1e6:
			return strconv.FormatFloat(f, 'f', 0, 64)
		case math.Abs(f) >= 100 || (!big && math.Abs(f) >= 10):
			return strconv.FormatFloat(f, 'f', 0, 64)
		case math.Abs(f) >= 1:
			return strconv.FormatFloat(f, 'f', 1, 64)
		default:
			return strconv.FormatFloat(f, 'g', 2, 64)
		}
	}
	switch unit {
	case "s":
		switch {
		case v == 0:
			return "0 s"
		case v < 1e-3:
			return num(v*1e6) + " µs"
		case v < 1:
			return num(v*1e3) + " ms"
		default:
			return num(v) + " s"
		}
	case "ops":
		return num(v) + " ops/s"
	case "percentunit":
		return num(v*100) + "%"
	default:
		return num(v)
	}
}

// grafanaColor maps Grafana's named colours to theirs in the dark theme.
func grafanaColor(c string) string {
	switch c {
	case "green":
		return "#73BF69"
	case "orange":
		return "#FF9830"
	case "red":
		return "#F2495C"
	case "yellow":
		return "#FADE2A"
	case "blue":
		return "#5794F2"
	}
	return c
}
