package plot

import (
	"fmt"
	"image/color"
	"math"
	"sort"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"statesim/check"
)

// maxBins bounds the points of a time series; beyond it steps are binned.
const maxBins = 600

// bin is a run of consecutive steps drawn as one point.
type bin struct{ lo, hi int } // indices into Run.Steps, [lo, hi)

func bins(n int) []bin {
	w := max(1, (n+maxBins-1)/maxBins)
	var out []bin
	for lo := 0; lo < n; lo += w {
		out = append(out, bin{lo, min(n, lo+w)})
	}
	return out
}

// Write draws every chart the run supports into dir, named after the
// run: NAME-budget, NAME-cache, NAME-queue and (not from a trace)
// NAME-latency, each as .png and .svg. It returns the files written.
func Write(run *Run, dir string) ([]string, error) {
	if len(run.Steps) == 0 {
		return nil, fmt.Errorf("plot %s: the run executed no steps", run.Name)
	}
	base := fileBase(run.Name)
	var files []string
	charts := []struct {
		suffix string
		render func(*Run, draw.Canvas)
	}{{"budget", budgetChart}, {"cache", cacheChart}, {"queue", queueChart}}
	if !run.FromTrace && len(run.E2E) > 0 {
		charts = append(charts, struct {
			suffix string
			render func(*Run, draw.Canvas)
		}{"latency", latencyChart})
	}
	for _, c := range charts {
		fs, err := save(dir, base+"-"+c.suffix, figW, figH, func(dc draw.Canvas) { c.render(run, dc) })
		if err != nil {
			return files, err
		}
		files = append(files, fs...)
	}
	return files, nil
}

func line(xys plotter.XYs, c color.Color, width vg.Length, dashed bool) *plotter.Line {
	l, _ := plotter.NewLine(xys)
	l.Color = c
	l.Width = width
	if dashed {
		l.Dashes = []vg.Length{vg.Points(6), vg.Points(4)}
	}
	return l
}

func hline(x0, x1, y float64, c color.Color) *plotter.Line {
	return line(plotter.XYs{{X: x0, Y: y}, {X: x1, Y: y}}, c, vg.Points(1.5), true)
}

func markers(xys plotter.XYs, c color.Color, shape draw.GlyphDrawer, r vg.Length) *plotter.Scatter {
	s, _ := plotter.NewScatter(xys)
	s.GlyphStyle = draw.GlyphStyle{Color: c, Shape: shape, Radius: r}
	return s
}

func stepsLabel(run *Run) string {
	if w := bins(len(run.Steps)); len(w) > 0 && w[0].hi-w[0].lo > 1 {
		return fmt.Sprintf("scheduler step (bins of %d steps)", w[0].hi-w[0].lo)
	}
	return "scheduler step"
}

// invariantGlyphs give each invariant a distinct marker.
var invariantGlyphs = [check.NumInvariants]struct {
	c     color.Color
	shape draw.GlyphDrawer
}{
	{red, draw.CrossGlyph{}}, {purple, draw.CircleGlyph{}}, {black, draw.SquareGlyph{}}, {orange, draw.PyramidGlyph{}},
	{green, draw.BoxGlyph{}}, {blue, draw.RingGlyph{}}, {grey, draw.PlusGlyph{}}, {sky, draw.TriangleGlyph{}},
}

// budgetChart stacks each step's scheduled tokens by the request's state
// under max_num_batched_tokens, with exact markers above the stack. A
// binned run gets a second, unbinned panel zoomed on the first violation
// (or the first new request given one token).
func budgetChart(run *Run, dc draw.Canvas) {
	title := fmt.Sprintf("%s: token budget per step", run.Name)
	full, leg := budgetPanel(run, run.Steps, title)
	legendW := 3.3 * vg.Inch
	lo, hi, ok := zoomWindow(run)
	if !ok {
		withLegend(dc, full, leg, legendW)
		return
	}
	zoom, _ := budgetPanel(run, run.Steps[lo:hi],
		fmt.Sprintf("zoom: steps %d to %d, one point per step", run.Steps[lo].Step, run.Steps[hi-1].Step))
	zoom.Title.TextStyle.Font.Size = 13
	plotsC := dc
	plotsC.Max.X -= legendW
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadY: vg.Points(8), PadTop: vg.Points(2), PadBottom: vg.Points(2)}
	cs := plot.Align([][]*plot.Plot{{full}, {zoom}}, tiles, plotsC)
	full.Draw(cs[0][0])
	zoom.Draw(cs[1][0])
	legC := dc
	legC.Min.X = dc.Max.X - legendW + 6
	legC.Max.Y -= 30
	leg.Top, leg.Left = true, true
	leg.Draw(legC)
}

// zoomWindow picks up to 60 steps around the first violation, else the
// first new request given one token, when the run is binned.
func zoomWindow(run *Run) (lo, hi int, ok bool) {
	n := len(run.Steps)
	if n <= maxBins {
		return 0, 0, false
	}
	at := -1
	for k := range run.Steps {
		for _, v := range run.Steps[k].Violations {
			if v > 0 && at < 0 {
				at = k
			}
		}
	}
	if at < 0 {
		for k := range run.Steps {
			if run.Steps[k].OneToken > 0 {
				at = k
				break
			}
		}
	}
	if at < 0 {
		return 0, 0, false
	}
	lo = max(0, at-15)
	hi = min(n, lo+60)
	return lo, hi, true
}

// budgetPanel draws the stacked token split of steps with the marker rows.
func budgetPanel(run *Run, steps []Step, title string) (*plot.Plot, plot.Legend) {
	ylab := "tokens scheduled per step"
	bs := bins(len(steps))
	xlab := "scheduler step"
	if w := bs[0].hi - bs[0].lo; w > 1 {
		// A mean would hide the short bursts that exhaust the budget, so
		// each bin shows its busiest step.
		ylab = "tokens (busiest step of bin)"
		xlab = fmt.Sprintf("scheduler step (bins of %d steps)", w)
	}
	p := newPlot(title, xlab, ylab)
	p.X.Tick.Marker = intTicks{}
	p.Y.Tick.Marker = intTicks{}
	leg := newLegend()
	// Cumulative layers, bottom to top.
	layers := []struct {
		name string
		c    color.Color
		v    func(*Step) int32
	}{
		{"decode", blue, func(s *Step) int32 { return s.Decode }},
		{"extend (prompt continues)", green, func(s *Step) int32 { return s.Extend }},
		{"prefill (whole prompt)", orange, func(s *Step) int32 { return s.Prefill }},
		{"new request cut by the budget", red, func(s *Step) int32 { return s.NewCut }},
	}
	total := func(s *Step) int32 { return s.Decode + s.Extend + s.Prefill + s.NewCut }
	cum := make([]plotter.XYs, len(layers))
	peak := 0.0
	for _, b := range bs {
		busiest := &steps[b.lo]
		for k := b.lo + 1; k < b.hi; k++ {
			if total(&steps[k]) > total(busiest) {
				busiest = &steps[k]
			}
		}
		x := float64(steps[b.lo].Step)
		sum := 0.0
		for i, l := range layers {
			sum += float64(l.v(busiest))
			cum[i] = append(cum[i], plotter.XY{X: x, Y: sum})
		}
		peak = max(peak, sum)
	}
	// The post-step fill needs a closing point at the end of the last bin.
	xEnd := float64(steps[len(steps)-1].Step + 1)
	for i := range cum {
		cum[i] = append(cum[i], plotter.XY{X: xEnd, Y: cum[i][len(cum[i])-1].Y})
	}
	for i := len(layers) - 1; i >= 0; i-- {
		l := line(cum[i], layers[i].c, 0, false)
		l.LineStyle.Width = 0
		l.StepStyle = plotter.PostStep
		l.FillColor = layers[i].c
		p.Add(l)
	}
	for i := range layers {
		l := line(nil, layers[i].c, 0, false)
		l.FillColor = layers[i].c
		leg.Add(layers[i].name, l)
	}
	x0 := float64(steps[0].Step)
	top := peak
	if b := run.MaxNumBatchedTokens; b > 0 {
		top = max(top, float64(b))
		h := hline(x0, xEnd, float64(b), black)
		p.Add(h)
		leg.Add(fmt.Sprintf("max_num_batched_tokens = %d", b), h)
	}
	if top <= 0 {
		top = 1
	}
	// Marker rows above the stack, one per kind, at exact steps.
	type row struct {
		name  string
		c     color.Color
		shape draw.GlyphDrawer
		xs    plotter.XYs
		n     int64
	}
	cut := &row{name: "new request given < its prompt", c: red, shape: draw.TriangleGlyph{}}
	one := &row{name: "new request given 1 token", c: black, shape: draw.CrossGlyph{}}
	rows := []*row{cut, one}
	var inv [check.NumInvariants]*row
	for i := range inv {
		g := invariantGlyphs[i]
		inv[i] = &row{name: "violation: " + check.Invariant(i).String(), c: g.c, shape: g.shape}
		rows = append(rows, inv[i])
	}
	for k := range steps {
		s := &steps[k]
		x := float64(s.Step) + 0.5
		if s.CutNew > 0 {
			cut.xs = append(cut.xs, plotter.XY{X: x})
			cut.n += int64(s.CutNew)
		}
		if s.OneToken > 0 {
			one.xs = append(one.xs, plotter.XY{X: x})
			one.n += int64(s.OneToken)
		}
		for i, v := range s.Violations {
			if v > 0 {
				inv[i].xs = append(inv[i].xs, plotter.XY{X: x})
				inv[i].n += int64(v)
			}
		}
	}
	k := 0
	for _, r := range rows {
		if r.n == 0 {
			continue
		}
		k++
		y := top * (1 + 0.08*float64(k))
		for i := range r.xs {
			r.xs[i].Y = y
		}
		m := markers(r.xs, r.c, r.shape, vg.Points(4))
		p.Add(m)
		leg.Add(fmt.Sprintf("%s (%d)", r.name, r.n), m)
	}
	p.Y.Min = 0
	p.Y.Max = top * (1.08 + 0.08*float64(k))
	p.X.Min, p.X.Max = x0, xEnd
	return p, leg
}

// cacheChart shows the block pool and the state slots over steps.
func cacheChart(run *Run, dc draw.Canvas) {
	p := newPlot(fmt.Sprintf("%s: cache occupancy", run.Name), stepsLabel(run), "blocks / slot index")
	p.X.Tick.Marker, p.Y.Tick.Marker = intTicks{}, intTicks{}
	leg := newLegend()
	bs := bins(len(run.Steps))
	series := []struct {
		name string
		c    color.Color
		v    func(*Step) int32
		agg  func(a, b int32) int32
	}{
		{"blocks in use (max in bin)", blue, func(s *Step) int32 { return s.BlocksHeld }, max32},
		{"state slots in use (max in bin)", green, func(s *Step) int32 { return s.SlotsHeld }, max32},
		{"free queue length (min in bin)", orange, func(s *Step) int32 { return s.FreeQueue }, min32},
		{"highest slot index touched", purple, func(s *Step) int32 { return s.HighestSlot }, max32},
	}
	if run.FromTrace {
		series[1].name = "state slots of scheduled requests (max in bin)"
	}
	top := 0.0
	for _, s := range series {
		var xys plotter.XYs
		for _, b := range bs {
			v := s.v(&run.Steps[b.lo])
			for k := b.lo + 1; k < b.hi; k++ {
				v = s.agg(v, s.v(&run.Steps[k]))
			}
			if v < 0 {
				continue // unknown (from a trace)
			}
			xys = append(xys, plotter.XY{X: float64(run.Steps[b.hi-1].Step), Y: float64(v)})
			top = max(top, float64(v))
		}
		if len(xys) == 0 {
			continue
		}
		l := line(xys, s.c, vg.Points(2), false)
		p.Add(l)
		leg.Add(s.name, l)
	}
	x0, x1 := float64(run.Steps[0].Step), float64(run.Steps[len(run.Steps)-1].Step)
	if run.NumGPUBlocks > 0 {
		h := hline(x0, x1, float64(run.NumGPUBlocks), grey)
		p.Add(h)
		leg.Add(fmt.Sprintf("num_gpu_blocks = %d", run.NumGPUBlocks), h)
		top = max(top, float64(run.NumGPUBlocks))
	}
	if run.FirstWrappingSlot >= 0 && run.StateIndexBits < 64 {
		w := float64(run.FirstWrappingSlot)
		h := hline(x0, x1, w, red)
		h.Width = vg.Points(2)
		p.Add(h)
		leg.Add(fmt.Sprintf("first wrapping slot ceil(2^%d / stride) = %d", run.StateIndexBits, run.FirstWrappingSlot), h)
		top = max(top, w)
	}
	p.Y.Min, p.Y.Max = 0, max(1, top*1.08)
	p.X.Min, p.X.Max = x0, max(x1, x0+1)
	withLegend(dc, p, leg, 3.3*vg.Inch)
}

// queueChart shows queue depth over simulated time and, below it,
// preemptions per bin.
func queueChart(run *Run, dc draw.Canvas) {
	bs := bins(len(run.Steps))
	per := ""
	if bs[0].hi-bs[0].lo > 1 {
		per = fmt.Sprintf(" per bin of %d steps", bs[0].hi-bs[0].lo)
	}
	top := newPlot(fmt.Sprintf("%s: queue depth and preemptions", run.Name), "", "requests")
	bottom := newPlot("", "simulated time (s)", "preemptions"+per)
	top.Y.Tick.Marker, bottom.Y.Tick.Marker = intTicks{}, intTicks{}
	leg := newLegend()
	series := []struct {
		name string
		c    color.Color
		v    func(*Step) int32
	}{
		{"waiting (max in bin)", orange, func(s *Step) int32 { return s.Waiting }},
		{"running (max in bin)", blue, func(s *Step) int32 { return s.Running }},
	}
	if run.FromTrace {
		series = series[1:]
		series[0].name = "rows scheduled (max in bin)"
		series[0].v = func(s *Step) int32 { return s.Rows }
	}
	tEnd := func(b bin) float64 { return float64(run.Steps[b.hi-1].EndNS) / 1e9 }
	for _, s := range series {
		var xys plotter.XYs
		for _, b := range bs {
			v := s.v(&run.Steps[b.lo])
			for k := b.lo + 1; k < b.hi; k++ {
				v = max(v, s.v(&run.Steps[k]))
			}
			xys = append(xys, plotter.XY{X: tEnd(b), Y: float64(v)})
		}
		l := line(xys, s.c, vg.Points(2), false)
		top.Add(l)
		leg.Add(s.name, l)
	}
	var pre plotter.XYs
	var total int64
	for _, b := range bs {
		n := 0
		for k := b.lo; k < b.hi; k++ {
			n += int(run.Steps[k].Preempted)
		}
		total += int64(n)
		pre = append(pre, plotter.XY{X: tEnd(b), Y: float64(n)})
	}
	pl := line(pre, red, vg.Points(1.5), false)
	pl.StepStyle = plotter.PreStep
	pl.FillColor = color.NRGBA{213, 94, 0, 110}
	bottom.Add(pl)
	leg.Add(fmt.Sprintf("preemptions (%d in all)", total), pl)
	t0, t1 := float64(run.Steps[0].StartNS)/1e9, tEnd(bs[len(bs)-1])
	for _, p := range []*plot.Plot{top, bottom} {
		p.X.Min, p.X.Max = t0, max(t1, t0+1e-3)
		p.Y.Min = 0
	}
	bottom.Y.Max = max(1, bottom.Y.Max)
	legendW := 3.3 * vg.Inch
	plotsC := dc
	plotsC.Max.X -= legendW
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadY: vg.Points(6), PadTop: vg.Points(2), PadBottom: vg.Points(2)}
	cs := plot.Align([][]*plot.Plot{{top}, {bottom}}, tiles, plotsC)
	top.Draw(cs[0][0])
	bottom.Draw(cs[1][0])
	legC := dc
	legC.Min.X = dc.Max.X - legendW + 6
	legC.Max.Y -= 30
	leg.Top, leg.Left = true, true
	leg.Draw(legC)
}

// latencyChart draws the CDFs of TTFT, ITL and end-to-end latency on one
// log-scaled time axis.
func latencyChart(run *Run, dc draw.Canvas) {
	p := newPlot(fmt.Sprintf("%s: latency CDFs (step-time model)", run.Name), "latency (ms, log scale)",
		fmt.Sprintf("fraction of finished requests (%d)", len(run.E2E)))
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	leg := newLegend()
	lo, hi := math.Inf(1), 0.0
	for _, s := range []struct {
		name string
		c    color.Color
		xs   []float64
	}{{"TTFT", blue, run.TTFT}, {"ITL (mean per request)", green, run.ITL}, {"end-to-end", red, run.E2E}} {
		var xys plotter.XYs
		v := append([]float64(nil), s.xs...)
		sort.Float64s(v)
		for i, x := range v {
			ms := max(x*1e3, 1e-3) // a log axis needs > 0
			xys = append(xys, plotter.XY{X: ms, Y: float64(i+1) / float64(len(v))})
			lo, hi = min(lo, ms), max(hi, ms)
		}
		if len(xys) == 0 {
			continue
		}
		l := line(xys, s.c, vg.Points(2), false)
		l.StepStyle = plotter.PostStep
		p.Add(l)
		leg.Add(fmt.Sprintf("%s, p50 %.4g ms", s.name, v[(len(v)-1)/2]*1e3), l)
	}
	if hi > 0 {
		p.X.Min, p.X.Max = lo/1.2, hi*1.2
	}
	p.Y.Min, p.Y.Max = 0, 1.02
	withLegend(dc, p, leg, 3.3*vg.Inch)
}

func max32(a, b int32) int32 { return max(a, b) }
func min32(a, b int32) int32 { return min(a, b) }

// intTicks labels ticks as whole numbers (steps, tokens, blocks), never
// "18575.00".
type intTicks struct{}

func (intTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = strconv.FormatFloat(math.Round(ts[i].Value), 'f', 0, 64)
		}
	}
	return ts
}
