package sweep

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"statesim/invariant"
)

// shortNames label the invariant columns of the text table; the CSV and
// JSON use the full names.
var shortNames = [...]string{"dbp", "stale", "wrap", "budget", "seqs", "blocks", "live", "time"}

// Point is one grid point: its axis values and its cells (one per seed
// present), with the sweep's metric over them.
type Point struct {
	Values []string  `json:"values"`
	Seeds  int       `json:"seeds"`
	Value  float64   `json:"-"`
	Cells  []*Result `json:"-"`
}

// Points groups results (in grid order) by axis values.
func Points(spec *Spec, rs []*Result) []Point {
	m, _ := MetricByName(spec.Metric)
	var pts []Point
	for _, r := range rs {
		if n := len(pts); n > 0 && slices.Equal(pts[n-1].Values, r.Values) {
			pts[n-1].Cells = append(pts[n-1].Cells, r)
			continue
		}
		pts = append(pts, Point{Values: r.Values, Cells: []*Result{r}})
	}
	for i := range pts {
		pts[i].Seeds = len(pts[i].Cells)
		pts[i].Value = m.Of(pts[i].Cells)
	}
	return pts
}

func per1k(n, req int64) string {
	if n < 0 || req == 0 {
		return ""
	}
	return strconv.FormatFloat(float64(n)*1000/float64(req), 'f', 2, 64)
}

func wrapStep(r *Result) string {
	if r.FirstWrap == nil {
		return ""
	}
	return strconv.Itoa(r.FirstWrap.TrainingStep)
}

func fmtValue(v float64) string {
	if math.IsNaN(v) {
		return "none"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// WriteTable writes the per-cell table and the per-point summary.
func WriteTable(w io.Writer, spec *Spec, rs []*Result) error {
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	var head []string
	for _, a := range spec.Axes {
		head = append(head, a.Key)
	}
	head = append(head, "seed", "requests")
	head = append(head, shortNames[:]...)
	head = append(head, "imposters", "corrupt/1k", "diverg/1k", "preempt", "req/s", "wrap@train")
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	var failed []*Result
	for _, r := range rs {
		row := append([]string(nil), r.Values...)
		if r.Error != "" {
			failed = append(failed, r)
			row = append(row, strconv.FormatUint(r.Seed, 10), "error")
			row = append(row, make([]string, len(head)-len(row))...)
			fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
			continue
		}
		row = append(row, strconv.FormatUint(r.Seed, 10), strconv.FormatInt(r.Requests, 10))
		for _, v := range r.Violations {
			row = append(row, strconv.FormatInt(v, 10))
		}
		row = append(row, strconv.FormatInt(r.Imposters, 10), per1k(r.Corrupted, r.Requests), per1k(r.Divergent, r.Requests),
			strconv.FormatInt(r.Preemptions, 10), strconv.FormatFloat(r.RequestsPerS, 'f', 1, 64), wrapStep(r))
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	tw.Flush()
	for _, r := range failed {
		fmt.Fprintf(&b, "error in %s: %s\n", r.Key, r.Error)
	}
	fmt.Fprintf(&b, "\ninvariants: ")
	for i, inv := range invariant.All() {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s = %s", shortNames[i], inv)
	}
	m, _ := MetricByName(spec.Metric)
	fmt.Fprintf(&b, "\n\n%s, by point (over seeds):\n", m.Label)
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	head = head[:len(spec.Axes)]
	fmt.Fprintln(tw, strings.Join(append(head, "seeds", m.Name), "\t")+"\t")
	for _, p := range Points(spec, rs) {
		fmt.Fprintln(tw, strings.Join(append(append([]string(nil), p.Values...), strconv.Itoa(p.Seeds), fmtValue(p.Value)), "\t")+"\t")
	}
	tw.Flush()
	_, err := w.Write(b.Bytes())
	return err
}

// WriteCSV writes one row per cell with every counter.
func WriteCSV(w io.Writer, spec *Spec, rs []*Result) error {
	cw := csv.NewWriter(w)
	head := []string{"index"}
	for _, a := range spec.Axes {
		head = append(head, a.Key)
	}
	head = append(head, "seed", "requests", "finished", "steps", "preemptions", "num_gpu_blocks", "highest_slot", "first_wrapping_slot")
	for _, inv := range invariant.All() {
		head = append(head, inv.String())
	}
	head = append(head, "imposters", "misclassified_rows", "corrupted_requests", "corrupted_per_1000", "divergent_requests",
		"divergent_per_1000", "requests_per_s", "output_tokens_per_s", "first_wrap_step", "first_wrap_training_step", "first_wrap_request", "error")
	cw.Write(head)
	i64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	f64 := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	for _, r := range rs {
		row := []string{strconv.Itoa(r.Index)}
		row = append(row, r.Values...)
		row = append(row, strconv.FormatUint(r.Seed, 10), i64(r.Requests), i64(r.Finished), i64(r.Steps), i64(r.Preemptions),
			strconv.Itoa(r.NumGPUBlocks), i64(r.HighestSlot), i64(r.FirstWrappingSlot))
		for _, v := range r.Violations {
			row = append(row, i64(v))
		}
		div := ""
		if r.Divergent >= 0 {
			div = i64(r.Divergent)
		}
		ws, wt, wr := "", "", ""
		if fw := r.FirstWrap; fw != nil {
			ws, wt, wr = i64(fw.Step), strconv.Itoa(fw.TrainingStep), i64(fw.RequestID)
		}
		row = append(row, i64(r.Imposters), i64(r.Misclassified), i64(r.Corrupted), per1k(r.Corrupted, r.Requests), div,
			per1k(r.Divergent, r.Requests), f64(r.RequestsPerS), f64(r.OutputTokensPerS), ws, wt, wr, r.Error)
		cw.Write(row)
	}
	cw.Flush()
	return cw.Error()
}

// WriteJSON writes the sweep, its cells and its points.
func WriteJSON(w io.Writer, spec *Spec, rs []*Result) error {
	type point struct {
		Values []string `json:"values"`
		Seeds  int      `json:"seeds"`
		Value  *float64 `json:"value"` // null: none
	}
	m, _ := MetricByName(spec.Metric)
	out := struct {
		Sweep  *Spec     `json:"sweep"`
		Metric string    `json:"metric"`
		Cells  []*Result `json:"cells"`
		Points []point   `json:"points"`
	}{Sweep: spec, Metric: m.Name, Cells: rs}
	if out.Cells == nil {
		out.Cells = []*Result{}
	}
	for _, p := range Points(spec, rs) {
		pt := point{Values: p.Values, Seeds: p.Seeds}
		if !math.IsNaN(p.Value) {
			v := p.Value
			pt.Value = &v
		}
		out.Points = append(out.Points, pt)
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
