package plot

import (
	"fmt"
	"image/color"
	stdpng "image/png"
	"io"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Figure size and raster resolution: 1200×600 px, large enough to read
// the tick labels of a README thumbnail.
const (
	figW = 12 * vg.Inch
	figH = 6 * vg.Inch
	dpi  = 100
)

// Colours shared by the charts (colour-blind friendly, after Okabe–Ito).
var (
	blue   = color.RGBA{0, 114, 178, 255}
	orange = color.RGBA{230, 159, 0, 255}
	green  = color.RGBA{0, 158, 115, 255}
	red    = color.RGBA{213, 94, 0, 255}
	purple = color.RGBA{204, 121, 167, 255}
	sky    = color.RGBA{86, 180, 233, 255}
	yellow = color.RGBA{240, 228, 66, 255}
	black  = color.RGBA{0, 0, 0, 255}
	grey   = color.RGBA{128, 128, 128, 255}
)

// fileBase makes a scenario name safe as a file name prefix.
func fileBase(name string) string {
	name = strings.TrimSuffix(filepath.Base(name), ".yaml")
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "run"
	}
	return b.String()
}

// pngEncoder encodes the PNG charts: image/png's default, the bytes of
// vgimg.PngCanvas. The package's tests, which decode the pixels but never
// read the bytes, turn compression off: it was half their time.
var pngEncoder = stdpng.Encoder{}

// save renders a figure as PNG and SVG: dir/base.png and dir/base.svg.
func save(dir, base string, w, h vg.Length, render func(dc draw.Canvas)) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	png := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(dpi), vgimg.UseBackgroundColor(color.White))
	render(draw.New(png))
	svg := vgsvg.New(w, h)
	svgc := draw.New(svg)
	svgc.SetColor(color.White)
	svgc.Fill(svgc.Rectangle.Path())
	render(svgc)
	pngPath := filepath.Join(dir, base+".png")
	if err := writeFile(pngPath, func(w io.Writer) (int64, error) { return 0, pngEncoder.Encode(w, png.Image()) }); err != nil {
		return nil, err
	}
	svgPath := filepath.Join(dir, base+".svg")
	if err := writeFile(svgPath, svg.WriteTo); err != nil {
		return nil, err
	}
	return []string{pngPath, svgPath}, nil
}

func writeFile(path string, write func(io.Writer) (int64, error)) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}

// withLegend draws p on the left of dc and its legend in a column on the
// right, so the legend never hides data or markers.
func withLegend(dc draw.Canvas, p *plot.Plot, l plot.Legend, legendW vg.Length) {
	plotC := dc
	plotC.Max.X -= legendW
	p.Draw(plotC)
	legC := dc
	legC.Min.X = dc.Max.X - legendW + 6
	legC.Max.Y -= 30
	l.Top, l.Left = true, true
	l.Draw(legC)
}

// newPlot sets up a chart with a title and axis labels.
func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = 16
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.X.Label.TextStyle.Font.Size = 13
	p.Y.Label.TextStyle.Font.Size = 13
	p.X.Tick.Label.Font.Size = 11
	p.Y.Tick.Label.Font.Size = 11
	g := plotter.NewGrid()
	g.Vertical.Color = color.Gray{Y: 225}
	g.Horizontal.Color = color.Gray{Y: 225}
	p.Add(g)
	return p
}

func newLegend() plot.Legend {
	l := plot.NewLegend()
	l.TextStyle.Font.Size = 12
	l.ThumbnailWidth = 0.4 * vg.Inch
	l.Padding = vg.Points(4)
	return l
}
