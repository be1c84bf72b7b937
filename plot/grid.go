package plot

import (
	"fmt"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/palette/brewer"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Grid is one incidence over one swept key (a line) or two (a heatmap).
type Grid struct {
	Title  string
	Metric string // what Z is, with its unit
	// X is the inner (last) key, Y the outer one; Y is empty for a line.
	XKey    string
	XValues []string
	YKey    string
	YValues []string
	// Z[y][x] (Z[0][x] for a line); NaN means none happened.
	Z [][]float64
}

// WriteGrid draws the grid as dir/base.png and dir/base.svg.
func WriteGrid(g *Grid, dir, base string) ([]string, error) {
	if len(g.XValues) == 0 || len(g.Z) == 0 {
		return nil, fmt.Errorf("plot: empty grid")
	}
	if len(g.YValues) == 0 {
		return save(dir, base, figW, figH, func(dc draw.Canvas) { lineChart(g, dc) })
	}
	return save(dir, base, figW, figH, func(dc draw.Canvas) { heatmap(g, dc) })
}

func label(v float64) string {
	if math.IsNaN(v) {
		return "none"
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// cells adapts Grid to plotter.GridXYZ: column c is XValues[c], row r is
// YValues[r], at integer coordinates.
type cells struct{ g *Grid }

func (c cells) Dims() (int, int)       { return len(c.g.XValues), len(c.g.YValues) }
func (c cells) Z(col, row int) float64 { return c.g.Z[row][col] }
func (c cells) X(col int) float64      { return float64(col) }
func (c cells) Y(row int) float64      { return float64(row) }
func (c cells) Len() int               { return len(c.g.XValues) * len(c.g.YValues) }
func (c cells) XY(i int) (x, y float64) {
	return float64(i % len(c.g.XValues)), float64(i / len(c.g.XValues))
}
func (c cells) Label(i int) string {
	return label(c.g.Z[i/len(c.g.XValues)][i%len(c.g.XValues)])
}

func zRange(g *Grid) (lo, hi float64, any bool) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, row := range g.Z {
		for _, v := range row {
			if !math.IsNaN(v) {
				lo, hi, any = min(lo, v), max(hi, v), true
			}
		}
	}
	if !any {
		return 0, 1, false
	}
	if hi == lo {
		hi = lo + 1
	}
	return lo, hi, true
}

// heatmap draws labelled cells with a colour bar; "none" cells are grey.
// The first Y value is drawn on top, in the order of the sweep's table.
func heatmap(g *Grid, dc draw.Canvas) {
	flipped := *g
	n := len(g.YValues)
	flipped.YValues = make([]string, n)
	flipped.Z = make([][]float64, n)
	for i := range n {
		flipped.YValues[i], flipped.Z[i] = g.YValues[n-1-i], g.Z[n-1-i]
	}
	g = &flipped
	pal, _ := brewer.GetPalette(brewer.TypeSequential, "YlOrRd", 9)
	p := newPlot(g.Title, g.XKey, g.YKey)
	lo, hi, _ := zRange(g)
	h := plotter.NewHeatMap(cells{g}, pal)
	h.Min, h.Max = lo, hi
	h.NaN = color.Gray{Y: 215}
	p.Add(h)
	labels, _ := plotter.NewLabels(cells{g})
	nx := len(g.XValues)
	for i := range labels.TextStyle {
		labels.TextStyle[i].Font.Size = 12
		labels.TextStyle[i].XAlign = draw.XCenter
		labels.TextStyle[i].YAlign = draw.YCenter
		// White on the dark end of the palette.
		if z := g.Z[i/nx][i%nx]; !math.IsNaN(z) && (z-lo)/(hi-lo) > 0.6 {
			labels.TextStyle[i].Color = color.White
		}
	}
	p.Add(labels)
	p.NominalX(g.XValues...)
	p.NominalY(g.YValues...)
	p.X.Min, p.X.Max = -0.5, float64(len(g.XValues))-0.5
	p.Y.Min, p.Y.Max = -0.5, float64(len(g.YValues))-0.5
	barW := 1.6 * vg.Inch
	plotC := dc
	plotC.Max.X -= barW
	p.Draw(plotC)
	// The colour bar, in its own plot to the right.
	cb := plot.New()
	bar := &plotter.ColorBar{ColorMap: colorMap(pal, lo, hi), Vertical: true}
	cb.Add(bar)
	cb.HideX()
	cb.Y.Label.Text = g.Metric
	cb.Y.Label.TextStyle.Font.Size = 11
	cb.Y.Tick.Label.Font.Size = 11
	cb.Y.Padding = 0
	barC := dc
	barC.Min.X = dc.Max.X - barW + 10
	barC.Max.X = dc.Max.X - 0.9*vg.Inch
	barC.Min.Y += 0.6 * vg.Inch
	barC.Max.Y -= 0.5 * vg.Inch
	cb.Draw(barC)
}

func colorMap(p palette.Palette, lo, hi float64) palette.ColorMap {
	return &steps{colors: p.Colors(), lo: lo, hi: hi}
}

// steps is a palette.ColorMap over a discrete palette, matching the
// heat map's own binning.
type steps struct {
	colors []color.Color
	lo, hi float64
	alpha  float64
}

func (s *steps) At(v float64) (color.Color, error) {
	n := len(s.colors)
	i := int((v - s.lo) / (s.hi - s.lo) * float64(n))
	return s.colors[max(0, min(n-1, i))], nil
}
func (s *steps) Max() float64                { return s.hi }
func (s *steps) Min() float64                { return s.lo }
func (s *steps) SetMax(v float64)            { s.hi = v }
func (s *steps) SetMin(v float64)            { s.lo = v }
func (s *steps) Alpha() float64              { return 1 }
func (s *steps) SetAlpha(float64)            {}
func (s *steps) Palette(int) palette.Palette { return nil }

// lineChart draws the metric against one key; values that parse as
// numbers get a numeric axis, others a nominal one. Points where nothing
// happened are marked "none" on the x axis.
func lineChart(g *Grid, dc draw.Canvas) {
	p := newPlot(g.Title, g.XKey, g.Metric)
	numeric := true
	xs := make([]float64, len(g.XValues))
	for i, v := range g.XValues {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			numeric = false
			break
		}
		xs[i] = f
	}
	if !numeric {
		for i := range xs {
			xs[i] = float64(i)
		}
		p.NominalX(g.XValues...)
	} else {
		// Powers of two (rollouts per prompt) read best on a log axis.
		if xs[0] > 0 && xs[len(xs)-1]/xs[0] >= 8 {
			p.X.Scale = plot.LogScale{}
		}
		ticks := make([]plot.Tick, len(xs))
		for i, x := range xs {
			ticks[i] = plot.Tick{Value: x, Label: g.XValues[i]}
		}
		p.X.Tick.Marker = plot.ConstantTicks(ticks)
	}
	var pts, none plotter.XYs
	var labs []string
	_, hi, _ := zRange(g)
	for i, z := range g.Z[0] {
		if math.IsNaN(z) {
			none = append(none, plotter.XY{X: xs[i], Y: 0})
			continue
		}
		pts = append(pts, plotter.XY{X: xs[i], Y: z})
		labs = append(labs, label(z))
	}
	if len(pts) > 0 {
		l := line(pts, blue, vg.Points(2), false)
		p.Add(l)
		m := markers(pts, blue, draw.CircleGlyph{}, vg.Points(4))
		p.Add(m)
		lb, _ := plotter.NewLabels(plotter.XYLabels{XYs: pts, Labels: labs})
		for i := range lb.TextStyle {
			lb.TextStyle[i].Font.Size = 12
			lb.Offset = vg.Point{X: vg.Points(6), Y: vg.Points(6)}
		}
		p.Add(lb)
	}
	if len(none) > 0 {
		m := markers(none, grey, draw.CrossGlyph{}, vg.Points(5))
		p.Add(m)
		nl := make([]string, len(none))
		for i := range nl {
			nl[i] = "none"
		}
		lb, _ := plotter.NewLabels(plotter.XYLabels{XYs: none, Labels: nl})
		lb.Offset = vg.Point{X: vg.Points(6), Y: vg.Points(6)}
		p.Add(lb)
	}
	p.Y.Min, p.Y.Max = 0, max(1, hi*1.15)
	x0, x1 := min(xs[0], xs[len(xs)-1]), max(xs[0], xs[len(xs)-1])
	if _, log := p.X.Scale.(plot.LogScale); log {
		p.X.Min, p.X.Max = x0/1.2, x1*1.2
	} else {
		pad := (x1 - x0) * 0.06
		if !numeric || pad == 0 {
			pad = 0.5
		}
		p.X.Min, p.X.Max = x0-pad, x1+pad
	}
	p.Draw(dc)
}
