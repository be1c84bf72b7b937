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

	"statesim/invariant"
)

// Write draws every chart the run supports into dir, named after the
// run: NAME-budget, NAME-cache, NAME-queue and (not from a trace)
// NAME-latency, each as .png and .svg. It returns the files written.
func Write(run *Run, dir string) ([]string, error) {
	if run.NumSteps == 0 {
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
	if run.PrefixCaching {
		charts = append(charts, struct {
			suffix string
			render func(*Run, draw.Canvas)
		}{"prefix", prefixChart})
	}
	if run.HeldPerRequest {
		charts = append(charts, struct {
			suffix string
			render func(*Run, draw.Canvas)
		}{"held", heldChart})
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
	if run.BinWidth > 1 {
		return fmt.Sprintf("scheduler step (bins of %d steps)", run.BinWidth)
	}
	return "scheduler step"
}

// invariantGlyphs give each invariant a distinct marker.
var invariantGlyphs = [invariant.NumInvariants]struct {
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
	full, leg := budgetPanel(run, run.Bins, run.BinWidth, title, math.MinInt64, math.MaxInt64)
	legendW := 3.3 * vg.Inch
	if run.BinWidth == 1 || len(run.Zoom) == 0 {
		withLegend(dc, full, leg, legendW)
		return
	}
	zb := make([]Bin, len(run.Zoom))
	for i := range run.Zoom {
		zb[i] = newBin(&run.Zoom[i])
	}
	lo, hi := zb[0].FirstStep, zb[len(zb)-1].LastStep
	zoom, _ := budgetPanel(run, zb, 1, fmt.Sprintf("zoom: steps %d to %d, one point per step", lo, hi), lo, hi)
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

// budgetPanel draws the stacked token split of bins with the marker rows
// of steps lo..hi.
func budgetPanel(run *Run, bins []Bin, width int64, title string, lo, hi int64) (*plot.Plot, plot.Legend) {
	ylab := "tokens scheduled per step"
	xlab := "scheduler step"
	if width > 1 {
		ylab = "tokens (busiest step of bin)"
		xlab = fmt.Sprintf("scheduler step (bins of %d steps)", width)
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
	cum := make([]plotter.XYs, len(layers))
	peak := 0.0
	for i := range bins {
		b := &bins[i]
		sum := 0.0
		for k, l := range layers {
			sum += float64(l.v(&b.Busiest))
			cum[k] = append(cum[k], plotter.XY{X: float64(b.FirstStep), Y: sum})
		}
		peak = max(peak, sum)
	}
	// The post-step fill needs a closing point at the end of the last bin.
	x0, xEnd := float64(bins[0].FirstStep), float64(bins[len(bins)-1].LastStep+1)
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
		ms    []Marker
	}
	rows := []row{
		{"new request given < its prompt", red, draw.TriangleGlyph{}, run.Cut},
		{"new request given 1 token", black, draw.CrossGlyph{}, run.OneToken},
	}
	for i := range run.Violations {
		g := invariantGlyphs[i]
		rows = append(rows, row{"violation: " + invariant.Invariant(i).String(), g.c, g.shape, run.Violations[i]})
	}
	k := 0
	for _, r := range rows {
		var xys plotter.XYs
		var n int64
		for _, m := range r.ms {
			if m.Step >= lo && m.Step <= hi {
				xys = append(xys, plotter.XY{X: float64(m.Step) + 0.5})
				n += m.Count
			}
		}
		if n == 0 {
			continue
		}
		k++
		y := top * (1 + 0.08*float64(k))
		for i := range xys {
			xys[i].Y = y
		}
		m := markers(xys, r.c, r.shape, vg.Points(4))
		p.Add(m)
		leg.Add(fmt.Sprintf("%s (%d)", r.name, n), m)
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
	series := []struct {
		name string
		c    color.Color
		v    func(*Bin) int64
	}{
		{"blocks in use (max in bin)", blue, func(b *Bin) int64 { return int64(b.MaxBlocksHeld) }},
		{"state slots in use (max in bin)", green, func(b *Bin) int64 { return int64(b.MaxSlotsHeld) }},
		{"free queue length (min in bin)", orange, func(b *Bin) int64 { return int64(b.MinFreeQueue) }},
		{"highest slot index touched", purple, func(b *Bin) int64 { return b.HighestSlot }},
	}
	if run.FromTrace {
		series[1].name = "slots of scheduled rows (max in bin)"
	}
	top := 0.0
	for _, s := range series {
		var xys plotter.XYs
		for i := range run.Bins {
			v := s.v(&run.Bins[i])
			if v < 0 {
				continue // unknown (from a trace)
			}
			xys = append(xys, plotter.XY{X: float64(run.Bins[i].LastStep), Y: float64(v)})
			top = max(top, float64(v))
		}
		if len(xys) == 0 {
			continue
		}
		l := line(xys, s.c, vg.Points(2), false)
		p.Add(l)
		leg.Add(s.name, l)
	}
	x0, x1 := float64(run.Bins[0].FirstStep), float64(run.Bins[len(run.Bins)-1].LastStep)
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
		leg.Add(fmt.Sprintf("first wrapping slot %d (2^%d / stride)", run.FirstWrappingSlot, run.StateIndexBits), h)
		top = max(top, w)
	}
	p.Y.Min, p.Y.Max = 0, max(1, top*1.08)
	p.X.Min, p.X.Max = x0, max(x1, x0+1)
	withLegend(dc, p, leg, 3.3*vg.Inch)
}

// queueChart shows queue depth over steps and, below it, preemptions per
// bin. Steps, not time, on x: bins may span the idle gaps between
// training steps, which a time axis would draw as ramps.
func queueChart(run *Run, dc draw.Canvas) {
	per := ""
	if run.BinWidth > 1 {
		per = fmt.Sprintf(" per bin of %d steps", run.BinWidth)
	}
	top := newPlot(fmt.Sprintf("%s: queue depth and preemptions", run.Name), "", "requests")
	bottom := newPlot("", stepsLabel(run), "preemptions"+per)
	top.Y.Tick.Marker, bottom.Y.Tick.Marker = intTicks{}, intTicks{}
	top.X.Tick.Marker, bottom.X.Tick.Marker = intTicks{}, intTicks{}
	leg := newLegend()
	series := []struct {
		name string
		c    color.Color
		v    func(*Bin) int32
	}{
		{"waiting (max in bin)", orange, func(b *Bin) int32 { return b.MaxWaiting }},
		{"running (max in bin)", blue, func(b *Bin) int32 { return b.MaxRunning }},
	}
	if run.FromTrace {
		series = series[1:]
		series[0].name = "rows scheduled (max in bin)"
		series[0].v = func(b *Bin) int32 { return b.MaxRows }
	}
	tEnd := func(b *Bin) float64 { return float64(b.LastStep) }
	for _, s := range series {
		var xys plotter.XYs
		for i := range run.Bins {
			xys = append(xys, plotter.XY{X: tEnd(&run.Bins[i]), Y: float64(s.v(&run.Bins[i]))})
		}
		l := line(xys, s.c, vg.Points(2), false)
		top.Add(l)
		leg.Add(s.name, l)
	}
	var pre plotter.XYs
	var total int64
	for i := range run.Bins {
		total += run.Bins[i].Preempted
		pre = append(pre, plotter.XY{X: tEnd(&run.Bins[i]), Y: float64(run.Bins[i].Preempted)})
	}
	pl := line(pre, red, vg.Points(1.5), false)
	pl.StepStyle = plotter.PreStep
	pl.FillColor = color.NRGBA{213, 94, 0, 110}
	bottom.Add(pl)
	leg.Add(fmt.Sprintf("preemptions (%d in all)", total), pl)
	t0, t1 := float64(run.Bins[0].FirstStep), tEnd(&run.Bins[len(run.Bins)-1])
	for _, p := range []*plot.Plot{top, bottom} {
		p.X.Min, p.X.Max = t0, max(t1, t0+1)
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

// intTicks labels ticks as whole numbers (steps, tokens, blocks), never
// "18575.00".
type intTicks struct{}

func (intTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label == "" {
			continue
		}
		if r := math.Round(ts[i].Value); math.Abs(ts[i].Value-r) < 1e-9 {
			ts[i].Label = strconv.FormatFloat(r, 'f', 0, 64)
		} else {
			ts[i].Label = "" // a fraction of a token or a step
		}
	}
	return ts
}

// prefixChart shows the prefix cache's hit rate in prompt tokens, per bin
// and over the run so far (as vLLM's prefix_cache_hits over
// prefix_cache_queries); bins with no lookup have no point.
func prefixChart(run *Run, dc draw.Canvas) {
	p := newPlot(fmt.Sprintf("%s: prefix cache hit rate", run.Name), stepsLabel(run), "hit tokens / query tokens (%)")
	p.X.Tick.Marker = intTicks{}
	leg := newLegend()
	var bin, cum plotter.XYs
	var q, h int64
	for i := range run.Bins {
		b := &run.Bins[i]
		if b.PrefixQueries == 0 {
			continue
		}
		q, h = q+b.PrefixQueries, h+b.PrefixHits
		x := float64(b.LastStep)
		bin = append(bin, plotter.XY{X: x, Y: 100 * float64(b.PrefixHits) / float64(b.PrefixQueries)})
		cum = append(cum, plotter.XY{X: x, Y: 100 * float64(h) / float64(q)})
	}
	if len(bin) > 0 {
		l := line(bin, blue, vg.Points(1.5), false)
		p.Add(l)
		leg.Add("in bin", l)
		c := line(cum, orange, vg.Points(2), false)
		p.Add(c)
		leg.Add("so far", c)
	}
	x0, x1 := float64(run.Bins[0].FirstStep), float64(run.Bins[len(run.Bins)-1].LastStep)
	p.Y.Min, p.Y.Max = 0, 100
	p.X.Min, p.X.Max = x0, max(x1, x0+1)
	withLegend(dc, p, leg, 3.3*vg.Inch)
}

// heldChart shows the blocks held per running request over steps: the
// most one request held in each bin and the mean over the bin's running
// requests. A Mamba cache mode shows here: align holds at most 2 + K
// state blocks per group, all one per block of tokens.
func heldChart(run *Run, dc draw.Canvas) {
	p := newPlot(fmt.Sprintf("%s: blocks held per request", run.Name), stepsLabel(run), "blocks")
	p.X.Tick.Marker, p.Y.Tick.Marker = intTicks{}, intTicks{}
	leg := newLegend()
	var most, mean plotter.XYs
	top := 1.0
	for i := range run.Bins {
		b := &run.Bins[i]
		x := float64(b.LastStep)
		if b.MaxHeldPerRequest >= 0 {
			most = append(most, plotter.XY{X: x, Y: float64(b.MaxHeldPerRequest)})
			top = max(top, float64(b.MaxHeldPerRequest))
		}
		if b.HeldBy > 0 {
			mean = append(mean, plotter.XY{X: x, Y: float64(b.HeldTotal) / float64(b.HeldBy)})
		}
	}
	if len(most) > 0 {
		l := line(most, blue, vg.Points(2), false)
		p.Add(l)
		leg.Add("most by one request (max in bin)", l)
	}
	if len(mean) > 0 {
		l := line(mean, orange, vg.Points(1.5), false)
		p.Add(l)
		leg.Add("mean per running request", l)
	}
	x0, x1 := float64(run.Bins[0].FirstStep), float64(run.Bins[len(run.Bins)-1].LastStep)
	p.Y.Min, p.Y.Max = 0, top*1.08
	p.X.Min, p.X.Max = x0, max(x1, x0+1)
	withLegend(dc, p, leg, 3.3*vg.Inch)
}
