package sweep

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"statesim/internal/outfile"
	"statesim/plot"
)

// WriteOutputs writes the sweep's table (table.txt), results.csv,
// results.json and its chart (NAME-incidence.png/.svg: a line over one
// key, a heatmap over two) into dir, and returns the files written.
func WriteOutputs(dir string, spec *Spec, rs []*Result) ([]string, error) {
	files, err := WriteTables(dir, spec, rs)
	if err != nil {
		return files, err
	}
	if g := ChartGrid(spec, rs); g != nil && len(rs) > 0 {
		fs, err := plot.WriteGrid(g, dir, spec.Name+"-incidence")
		if err != nil {
			return files, err
		}
		files = append(files, fs...)
	}
	return files, nil
}

// WriteTables writes table.txt, results.csv and results.json only (a
// shard's partial grid gets no chart: its missing points would read as
// "none").
func WriteTables(dir string, spec *Spec, rs []*Result) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var files []string
	for _, f := range []struct {
		name  string
		write func(*bytes.Buffer) error
	}{
		{"table.txt", func(b *bytes.Buffer) error { return WriteTable(b, spec, rs) }},
		{"results.csv", func(b *bytes.Buffer) error { return WriteCSV(b, spec, rs) }},
		{"results.json", func(b *bytes.Buffer) error { return WriteJSON(b, spec, rs) }},
	} {
		var b bytes.Buffer
		if err := f.write(&b); err != nil {
			return files, err
		}
		p := filepath.Join(dir, f.name)
		if err := outfile.WriteAtomic(p, b.Bytes()); err != nil {
			return files, err
		}
		files = append(files, p)
	}
	return files, nil
}

// ChartGrid lays the points out for a chart, or nil beyond two keys.
func ChartGrid(spec *Spec, rs []*Result) *plot.Grid {
	m, _ := MetricByName(spec.Metric)
	n := len(spec.Axes)
	if n < 1 || n > 2 {
		return nil
	}
	g := &plot.Grid{Metric: m.Label}
	inner := spec.Axes[n-1]
	g.XKey, g.XValues = inner.Key, inner.Values
	rows := 1
	if n == 2 {
		g.YKey, g.YValues = spec.Axes[0].Key, spec.Axes[0].Values
		rows = len(g.YValues)
	}
	g.Z = make([][]float64, rows)
	for y := range g.Z {
		g.Z[y] = make([]float64, len(g.XValues))
		for x := range g.Z[y] {
			g.Z[y][x] = math.NaN()
		}
	}
	index := func(vals []string, v string) int {
		for i, x := range vals {
			if x == v {
				return i
			}
		}
		return -1
	}
	for _, p := range Points(spec, rs) {
		x := index(g.XValues, p.Values[n-1])
		y := 0
		if n == 2 {
			y = index(g.YValues, p.Values[0])
		}
		if x >= 0 && y >= 0 {
			g.Z[y][x] = p.Value
		}
	}
	seeds := fmt.Sprintf("%d seed", spec.Seeds)
	if spec.Seeds != 1 {
		seeds += "s"
	}
	g.Title = fmt.Sprintf("%s: %s (%s)", spec.Name, m.Label, seeds)
	return g
}
