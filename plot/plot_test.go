package plot

import (
	"bytes"
	"encoding/xml"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"statesim/engine"
	"strings"
	"testing"

	"statesim/report"
	"statesim/scenarios"
	"statesim/step"
)

// smallImposter is the imposter scenario cut to a size that runs in
// milliseconds but still fills the budget and recycles slots.
func smallImposter(t *testing.T) *scenarios.Scenario {
	t.Helper()
	sc, err := scenarios.Load("imposter", []string{"workload.num_prompts=256", "workload.batch_size=128"})
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// checkFiles decodes every PNG and parses every SVG written.
func checkFiles(t *testing.T, files []string) {
	t.Helper()
	if len(files) == 0 {
		t.Fatal("no files written")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		switch filepath.Ext(f) {
		case ".png":
			img, err := png.Decode(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if r := img.Bounds(); r.Dx() < 400 || r.Dy() < 200 {
				t.Fatalf("%s: %v is too small to read", f, r)
			}
			if !hasInk(img) {
				t.Fatalf("%s: blank image", f)
			}
		case ".svg":
			d := xml.NewDecoder(bytes.NewReader(b))
			n := 0
			for {
				tok, err := d.Token()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("%s: invalid SVG: %v", f, err)
				}
				if _, ok := tok.(xml.StartElement); ok {
					n++
				}
			}
			if n < 20 {
				t.Fatalf("%s: only %d elements", f, n)
			}
		default:
			t.Fatalf("unexpected file %s", f)
		}
	}
}

func TestWriteFromRun(t *testing.T) {
	// The full imposter run: long enough to be binned, with violations.
	sc, err := scenarios.Load("imposter", nil)
	if err != nil {
		t.Fatal(err)
	}
	run, rep := replay(t, sc, engine.Options{})
	if run.NumSteps != rep.Steps {
		t.Fatalf("recorded %d steps, report says %d", run.NumSteps, rep.Steps)
	}
	var viol, pre int64
	for _, ms := range run.Violations {
		for _, m := range ms {
			viol += m.Count
		}
	}
	for _, b := range run.Bins {
		pre += b.Preempted
	}
	if viol != rep.TotalViolations() || viol == 0 {
		t.Fatalf("markers for %d violations, report has %d", viol, rep.TotalViolations())
	}
	if pre != rep.Preemptions || len(run.E2E) != int(rep.Finished) {
		t.Fatalf("preemptions %d (report %d), latencies %d of %d finished", pre, rep.Preemptions, len(run.E2E), rep.Finished)
	}
	dir, files := write(t, run)
	for _, want := range []string{"imposter-budget.png", "imposter-cache.svg", "imposter-queue.png", "imposter-latency.svg"} {
		if !contains(files, filepath.Join(dir, want)) {
			t.Errorf("missing %s in %v", want, files)
		}
	}
	checkFiles(t, files)
}

func TestWriteFromTrace(t *testing.T) {
	sc := smallImposter(t)
	// The trace streams from the run to the reader through a pipe (held
	// whole, its buffer's growth was a third of the test).
	pr, pw := io.Pipe()
	rec := NewRecorder()
	var rep *report.Report
	ran := make(chan error, 1)
	go func() {
		var err error
		rep, err = engine.Run(sc, engine.Options{Trace: pw, Observe: rec.Observe})
		pw.CloseWithError(err)
		ran <- err
	}()
	run, err := ReadTrace(pr, "small")
	io.Copy(io.Discard, pr) // let the run finish if the reader stopped early
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if run.NumSteps != rep.Steps {
		t.Fatalf("trace gave %d steps, report says %d", run.NumSteps, rep.Steps)
	}
	// The trace and the hooks must agree on what they both see.
	live := rec.Done(rep, 0)
	if len(run.Bins) != len(live.Bins) || len(run.Cut) != len(live.Cut) || len(run.OneToken) != len(live.OneToken) {
		t.Fatalf("trace: %d bins, %d cut markers; hooks: %d bins, %d cut markers", len(run.Bins), len(run.Cut), len(live.Bins), len(live.Cut))
	}
	for i := range run.Bins {
		a, b := run.Bins[i], live.Bins[i]
		if a.Busiest.tokens() != b.Busiest.tokens() || a.Busiest.NewCut != b.Busiest.NewCut || a.HighestSlot != b.HighestSlot || a.Preempted != b.Preempted {
			t.Fatalf("bin %d: trace %+v, hooks %+v", i, a, b)
		}
	}
	files, err := Write(run, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 6 {
		t.Fatalf("from a trace want budget, cache and queue (6 files), got %v", files)
	}
	checkFiles(t, files)
}

func TestReadTraceRejectsGarbage(t *testing.T) {
	for _, in := range []string{"", "not json\n", `{"foo":1}` + "\n"} {
		if _, err := ReadTrace(strings.NewReader(in), "x"); err == nil {
			t.Errorf("ReadTrace(%q): no error", in)
		}
	}
}

// A trace from a newer statesim is refused with the version named; an
// unversioned (version 1) line and a version 2 line read the same.
func TestReadTraceVersions(t *testing.T) {
	v1 := `{"step":1,"start_ns":0,"end_ns":5,"preempted":[],"rows":[{"request_id":0,"scheduled":3,"computed":0,"prompt":3,"path":"prefill","slots":[1]}]}` + "\n"
	v2 := strings.Replace(v1, `{"step"`, `{"v":2,"step"`, 1)
	a, err := ReadTrace(strings.NewReader(withEnd(v1)), "v1")
	if err != nil {
		t.Fatal(err)
	}
	b, err := ReadTrace(strings.NewReader(withEnd(v2)), "v2")
	if err != nil {
		t.Fatal(err)
	}
	a.Name, b.Name = "", ""
	if a.NumSteps != 1 || !reflect.DeepEqual(a, b) {
		t.Fatalf("v1 %+v, v2 %+v", a, b)
	}
	v9 := strings.Replace(v1, `{"step"`, `{"v":9,"step"`, 1)
	if _, err := ReadTrace(strings.NewReader(v9), "v9"); err == nil || !strings.Contains(err.Error(), "trace schema version 9 is newer") {
		t.Fatalf("version 9: %v", err)
	}
}

// replay runs sc with o into a Recorder (o.Observe, if set, sees each
// record first) and returns the recorded run and the report.
func replay(t *testing.T, sc *scenarios.Scenario, o engine.Options) (*Run, *report.Report) {
	t.Helper()
	rec := NewRecorder()
	if see := o.Observe; see != nil {
		o.Observe = func(r *step.Record) { see(r); rec.Observe(r) }
	} else {
		o.Observe = rec.Observe
	}
	rep, err := engine.Run(sc, o)
	if err != nil {
		t.Fatal(err)
	}
	return rec.Done(rep, sc.Engine.MaxNumBatchedTokens), rep
}

// parseInline parses a test's inline YAML with --set overrides.
func parseInline(t *testing.T, y, file string, sets ...string) *scenarios.Scenario {
	t.Helper()
	sc, err := scenarios.Parse([]byte(y), file, sets)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// write draws run into a fresh directory and returns it and the files.
func write(t *testing.T, run *Run) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	files, err := Write(run, dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, files
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func TestWriteGrid(t *testing.T) {
	nan := math.NaN()
	dir := t.TempDir()
	heat := &Grid{Title: "heat", Metric: "per 1,000", XKey: "engine.gpu_memory_utilization", XValues: []string{"0.2", "0.9"},
		YKey: "engine.vllm_version", YValues: []string{"v0.13", "fixed"}, Z: [][]float64{{0.5, nan}, {0, 0}}}
	files, err := WriteGrid(heat, dir, "heat")
	if err != nil {
		t.Fatal(err)
	}
	checkFiles(t, files)
	for _, xs := range [][]string{{"8", "16", "128"}, {"v0.13", "v0.14"}, {"0.5"}} {
		z := make([]float64, len(xs))
		z[0] = nan
		files, err := WriteGrid(&Grid{Title: "line", Metric: "step", XKey: "k", XValues: xs, Z: [][]float64{z}}, dir, "line")
		if err != nil {
			t.Fatalf("%v: %v", xs, err)
		}
		checkFiles(t, files)
	}
	if _, err := WriteGrid(&Grid{}, dir, "empty"); err == nil {
		t.Fatal("empty grid: no error")
	}
}
