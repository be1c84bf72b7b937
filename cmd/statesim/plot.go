package main

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"statesim/engine"
	"statesim/internal/infile"
	"statesim/plot"
	"statesim/scenarios"
	"statesim/setup"
	"statesim/statecache"
	"statesim/step"
)

func init() {
	commands["plot"] = command{
		summary: "plot SCENARIO [--set key.path=value]... [--out DIR]\n" +
			"  statesim plot --trace FILE [SCENARIO] [--out DIR]\n" +
			"      draw token budget, cache occupancy, queue depth and latency charts (PNG + SVG)",
		run: cmdPlot,
	}
}

func cmdPlot(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("plot", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "out", "write the charts to `DIR`")
	tracePath := fs.String("trace", "", "plot a `FILE` written by 'statesim run --trace' instead of running")
	var sets setFlags
	fs.Var(&sets, "set", "override a scenario field, e.g. engine.gpu_memory_utilization=0.9 (repeatable)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	var run *plot.Run
	switch {
	case *tracePath != "":
		if len(pos) > 1 {
			fmt.Fprintf(stderr, "statesim plot: with --trace, want at most one SCENARIO (for its budget and wrap lines), got %d\n", len(pos))
			return exitBadInput
		}
		if run, err = plotTrace(*tracePath, pos, sets); err != nil {
			fmt.Fprintf(stderr, "statesim plot: %v\n", err)
			return exitBadInput
		}
	default:
		if len(pos) != 1 {
			fmt.Fprintf(stderr, "statesim plot: want exactly one SCENARIO (or --trace FILE), got %d\n", len(pos))
			return exitBadInput
		}
		st, err := setup.Load(pos[0], sets)
		if err != nil {
			fmt.Fprintf(stderr, "statesim: %v\n", err)
			return exitBadInput
		}
		rec := plot.NewRecorder()
		// Holdings: each request's blocks, for the held-per-request chart.
		rep, err := engine.RunSetup(st, engine.Options{Observe: rec.Observe, Detail: step.Holdings})
		if err != nil {
			return reportRunError(stderr, err)
		}
		run = rec.Done(rep, st.Scenario.Engine.MaxNumBatchedTokens)
	}
	files, err := plot.Write(run, *out)
	if isFileError(err) {
		return outputFailed(stderr, "--out", *out, err)
	}
	if err != nil {
		fmt.Fprintf(stderr, "statesim plot: %v\n", err)
		return exitInternal
	}
	for _, f := range files {
		fmt.Fprintln(stdout, f)
	}
	if run.FromTrace {
		fmt.Fprintln(stdout, "(from a trace: no waiting queue, block pool, latencies or invariant checks other than new requests on the decode path)")
	}
	return exitClean
}

// plotTrace reads a --trace file; an optional scenario supplies the
// engine settings the trace does not record.
func plotTrace(path string, pos, sets []string) (*plot.Run, error) {
	f, err := infile.Open(path) // a FIFO without a writer must not hang
	if err != nil {
		return nil, fmt.Errorf("--trace: %v", err)
	}
	defer f.Close()
	name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	run, err := plot.ReadTrace(f, name)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if len(pos) == 1 {
		st, err := setup.Load(pos[0], sets)
		if err != nil {
			return nil, err
		}
		if sc := st.Scenario; sc.Name != run.TraceScenario || sc.Seed != run.TraceSeed {
			return nil, &scenarios.InputError{File: path, Msg: fmt.Sprintf("written by scenario %q seed %d, not %q seed %d: its budget and slot bounds would be drawn from another run", run.TraceScenario, run.TraceSeed, sc.Name, sc.Seed)}
		}
		run.MaxNumBatchedTokens = st.Sched.Config.MaxNumBatchedTokens
		run.StateIndexBits = int(st.IndexBits)
		if st.Shape.NumMambaLayers() > 0 {
			ix := statecache.StateIndex{Stride: st.Layout.StateStrideElems, Bits: st.IndexBits}
			run.FirstWrappingSlot = ix.FirstWrappingSlot()
		}
	}
	return run, nil
}
