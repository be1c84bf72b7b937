package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"statesim/engine"
	"statesim/scenarios"
	"statesim/setup"
	"statesim/step"
	"statesim/timeline"
)

func init() {
	commands["run"] = command{
		summary: "run SCENARIO [--json] [--trace FILE] [--timeline FILE.json] [--rate-scale X] [--strict] [--prefix-match-unit N] [--set key.path=value]...\n      replay a scenario and report every invariant violation",
		run:     cmdRun,
	}
}

// startTimeline hooks a timeline writer into opt when path is set; done
// finishes and closes the file.
func startTimeline(path string, opt *engine.Options) (*timeline.Writer, func() error, error) {
	if path == "" {
		return nil, nil, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, err
	}
	tl := timeline.New(f)
	prev := opt.Observe
	opt.Observe = func(rec *step.Record) {
		if prev != nil {
			prev(rec)
		}
		tl.Observe(rec)
	}
	return tl, func() error {
		err := tl.Close()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}, nil
}

func cmdRun(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	tracePath := fs.String("trace", "", "write one JSON line per step to `FILE`")
	timelinePath := fs.String("timeline", "", "write a Chrome trace-event timeline to `FILE.json` (open in ui.perfetto.dev or chrome://tracing)")
	var sets setFlags
	fs.Var(&sets, "set", "override a scenario field, e.g. engine.gpu_memory_utilization=0.9 (repeatable)")
	fs.Func("rate-scale", "replay a trace `X` times faster (X > 1 is more load, a finite number > 0): --set workload.rate_scale=X", func(v string) error {
		return rateScaleFlag(&sets, v)
	})
	fs.Func("prefix-match-unit", "cache_config.prefix_match_unit `N`: hash prompts every N tokens, inside a block where vLLM allows it (#46384, v0.28 on): --set engine.prefix_match_unit=N", func(v string) error {
		return sets.Set("engine.prefix_match_unit=" + v)
	})
	fs.BoolFunc("strict", "fail on the first trace record vLLM would refuse, instead of rejecting that request and serving the rest: --set workload.strict=true", func(v string) error {
		return sets.Set("workload.strict=" + v)
	})
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "statesim run: want exactly one SCENARIO, got %d\n", len(pos))
		return exitBadInput
	}
	st, err := setup.Load(pos[0], sets)
	if err != nil {
		fmt.Fprintf(stderr, "statesim: %v\n", err)
		return exitBadInput
	}
	if err := distinctOutputs([][2]string{{"--trace", *tracePath}, {"--timeline", *timelinePath}}, scenarioInputs(pos[0], st.Scenario)); err != nil {
		fmt.Fprintf(stderr, "statesim run: %v\n", err)
		return exitBadInput
	}
	var opt engine.Options
	var traceFile *os.File
	if *tracePath != "" {
		traceFile, err = os.Create(*tracePath)
		if err != nil {
			return outputFailed(stderr, "--trace", *tracePath, err)
		}
		defer traceFile.Close()
		opt.Trace = traceFile
	}
	tl, tlDone, err := startTimeline(*timelinePath, &opt)
	if err != nil {
		return outputFailed(stderr, "--timeline", *timelinePath, err)
	}
	rep, err := engine.RunSetup(st, opt)
	if err != nil && traceFile != nil && isFileError(err) {
		return outputFailed(stderr, "--trace", *tracePath, err)
	}
	if err != nil {
		return reportRunError(stderr, err)
	}
	if tl != nil {
		tl.Violations(rep.Violations)
		if err := tlDone(); err != nil {
			return outputFailed(stderr, "--timeline", *timelinePath, err)
		}
	}
	if traceFile != nil {
		if err := traceFile.Close(); err != nil {
			return outputFailed(stderr, "--trace", *tracePath, err)
		}
	}
	if *asJSON {
		err = rep.WriteJSON(stdout)
	} else {
		err = rep.WriteText(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "statesim: %v\n", err)
		return exitInternal
	}
	if rep.TotalViolations() > 0 {
		return exitViolations
	}
	return exitClean
}

// scenarioInputs are the files a run reads: the scenario file (not a
// built-in), its trace and its config.json.
func scenarioInputs(arg string, sc *scenarios.Scenario) []string {
	var in []string
	if sc.File == arg {
		in = append(in, arg)
	}
	if sc.Workload.Kind == "trace" && sc.Workload.FS == nil {
		in = append(in, sc.Workload.Path)
	}
	if p := sc.Model.HFConfig; strings.Contains(p, "/") || strings.HasSuffix(p, ".json") {
		in = append(in, p, filepath.Join(filepath.Dir(arg), p))
	}
	return in
}

// rateScaleFlag checks --rate-scale before it becomes a --set: 0, a
// negative or a non-finite scale is an error, not recorded speed.
func rateScaleFlag(sets *setFlags, v string) error {
	x, err := strconv.ParseFloat(v, 64)
	if err != nil || !(x > 0) || math.IsInf(x, 1) {
		return fmt.Errorf("want a finite number > 0 (2 = twice the load), got %q", v)
	}
	return sets.Set("workload.rate_scale=" + v)
}
