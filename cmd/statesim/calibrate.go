package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"statesim/engine"
	"statesim/internal/infile"
)

func init() {
	commands["calibrate"] = command{
		summary: "calibrate STEPS.csv [--state-bandwidth-gbs B]\n      fit the step-time model to measured steps; prints a timing: section",
		run:     cmdCalibrate,
	}
}

// calibrateColumns are the CSV columns, in any order: the step's load as
// the model counts it (engine.StepLoad) and its measured duration.
var calibrateColumns = []string{"prefill_tokens", "decode_rows", "context_tokens", "state_bytes", "step_us"}

func cmdCalibrate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("calibrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	bw := fs.Float64("state-bandwidth-gbs", 4300, "device bandwidth for Mamba state traffic, GB/s (not fitted: it is collinear with the row counts)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "statesim calibrate: want exactly one STEPS.csv (columns %s), got %d arguments\n", strings.Join(calibrateColumns, ","), len(pos))
		return exitBadInput
	}
	f, err := infile.Open(pos[0]) // a FIFO without a writer must not hang
	if err != nil {
		fmt.Fprintf(stderr, "statesim: %v\n", err)
		return exitBadInput
	}
	defer f.Close()
	steps, err := readSteps(f, pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "statesim: %v\n", err)
		return exitBadInput
	}
	if !(*bw > 0) || math.IsInf(*bw, 0) {
		fmt.Fprintf(stderr, "statesim calibrate: --state-bandwidth-gbs: want a finite number > 0, got %g\n", *bw)
		return exitBadInput
	}
	t, err := engine.FitTiming(steps, *bw)
	if err != nil {
		fmt.Fprintf(stderr, "statesim: %s: %v\n", pos[0], err)
		return exitBadInput
	}
	for _, c := range []float64{t.StepOverheadUS, t.PrefillTokenNS, t.DecodeRowNS, t.ContextTokenNS, t.StateBandwidthGBs} {
		if math.IsNaN(c) || math.IsInf(c, 0) {
			fmt.Fprintf(stderr, "statesim: %s: the fit has a non-finite coefficient (%+v): the steps do not determine the model\n", pos[0], t)
			return exitBadInput
		}
	}
	var sq, worst float64
	for _, s := range steps {
		rel := (engine.StepNS(&t, s.Load) - s.NS) / s.NS
		sq += rel * rel
		worst = max(worst, math.Abs(rel))
	}
	fmt.Fprintf(stdout, "# fitted to %d steps of %s: relative error rms %.1f%%, worst %.1f%%\n", len(steps), pos[0],
		100*math.Sqrt(sq/float64(len(steps))), 100*worst)
	fmt.Fprintf(stdout, "timing:\n  step_overhead_us: %.6g\n  prefill_token_ns: %.6g\n  decode_row_ns: %.6g\n  context_token_ns: %.6g\n  state_bandwidth_gbs: %.6g\n",
		t.StepOverheadUS, t.PrefillTokenNS, t.DecodeRowNS, t.ContextTokenNS, t.StateBandwidthGBs)
	return exitClean
}

// Bounds on a STEPS.csv, which is held in memory to fit (README,
// "Bounds"): lines (a measured step each, 40 bytes held) and a line's
// length (a step is five numbers). Variables for tests.
var (
	maxCalibrateLines    = 1 << 22
	maxCalibrateLineSize = 64 << 10
)

// readSteps reads the measured steps: a header naming calibrateColumns,
// then one step per line; errors are FILE:LINE: problem.
func readSteps(r io.Reader, name string) ([]engine.MeasuredStep, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, min(4096, maxCalibrateLineSize+1)), maxCalibrateLineSize+1) // +1: the newline
	var col map[string]int
	var steps []engine.MeasuredStep
	line := 0
	for line = 1; sc.Scan(); line++ {
		if line > maxCalibrateLines {
			return nil, fmt.Errorf("%s:%d: more than %d lines, the most a STEPS.csv may hold", name, line, maxCalibrateLines)
		}
		text := strings.TrimSpace(sc.Text())
		if text == "" || text[0] == '#' {
			continue
		}
		fields := strings.Split(text, ",")
		if col == nil {
			col = map[string]int{}
			for i, f := range fields {
				col[strings.TrimSpace(f)] = i
			}
			for _, c := range calibrateColumns {
				if _, ok := col[c]; !ok {
					return nil, fmt.Errorf("%s:%d: header lacks column %s (want %s)", name, line, c, strings.Join(calibrateColumns, ","))
				}
			}
			continue
		}
		var v [5]float64
		for i, c := range calibrateColumns {
			j := col[c]
			if j >= len(fields) {
				return nil, fmt.Errorf("%s:%d: field %s: missing", name, line, c)
			}
			x, err := strconv.ParseFloat(strings.TrimSpace(fields[j]), 64)
			if err != nil || !(x >= 0) || math.IsInf(x, 0) { // !(x >= 0) refuses NaN too
				return nil, fmt.Errorf("%s:%d: field %s: want a number >= 0, got %q", name, line, c, fields[j])
			}
			v[i] = x
		}
		if v[4] <= 0 {
			return nil, fmt.Errorf("%s:%d: field step_us: a step takes time, got %q", name, line, fields[col["step_us"]])
		}
		steps = append(steps, engine.MeasuredStep{
			Load: engine.StepLoad{PrefillTokens: int64(v[0]), DecodeRows: int64(v[1]), ContextTokens: int64(v[2]), StateBytes: int64(v[3])},
			NS:   v[4] * 1e3,
		})
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%s:%d: longer than %d KiB, the most a STEPS.csv line may hold", name, line, maxCalibrateLineSize>>10)
		}
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	if col == nil {
		return nil, fmt.Errorf("%s: empty; want a header %s", name, strings.Join(calibrateColumns, ","))
	}
	return steps, nil
}
