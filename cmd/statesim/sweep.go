package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"statesim/internal/infile"
	"statesim/scenarios"
	"statesim/sweep"
)

func init() {
	commands["sweep"] = command{
		summary: "sweep SCENARIO --vary KEY=v1,v2,... [--vary ...] [--set k=v]... [--seeds N] [--workers N] [--out DIR] [--shard i/n] [--metric M]\n" +
			"  statesim sweep SWEEP [--seeds N] [--workers N] [--out DIR] [--shard i/n]   (a built-in sweep or a sweep .yaml file)\n" +
			"  statesim sweep merge [--out DIR] DIR...\n" +
			"  statesim sweep list\n" +
			"      run a scenario over a grid of values and seeds (parallel, resumable, shardable); table, CSV, JSON, chart",
		run: cmdSweep,
	}
}

// varyFlags collects repeated --vary flags.
type varyFlags []sweep.Axis

func (v *varyFlags) String() string { return fmt.Sprint(len(*v)) }
func (v *varyFlags) Set(s string) error {
	a, err := sweep.ParseVary(s)
	if err != nil {
		return err
	}
	*v = append(*v, a)
	return nil
}

func cmdSweep(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "merge":
			return cmdSweepMerge(args[1:], stdout, stderr)
		case "list":
			for _, n := range sweep.Names() {
				s, _, err := sweep.Load(n)
				if err != nil {
					fmt.Fprintf(stderr, "statesim: %v\n", err)
					return exitInternal
				}
				fmt.Fprintf(stdout, "%-20s %s\n", n, s.Description)
			}
			return exitClean
		}
	}
	fs := flag.NewFlagSet("sweep", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var vary varyFlags
	var sets setFlags
	fs.Var(&vary, "vary", "vary a scenario field over `KEY=v1,v2,...` (repeatable; the first is the outermost)")
	fs.Var(&sets, "set", "fix a scenario field for every cell (repeatable)")
	seeds := fs.Int("seeds", 0, "run `N` seeds per grid point: the scenario's seed and the next N-1 (default 1, or the built-in sweep's)")
	workers := fs.Int("workers", runtime.NumCPU(), "cells run in parallel")
	out := fs.String("out", "", "output `DIR` (default out/sweep-NAME); finished cells there are skipped")
	shardArg := fs.String("shard", "", "run shard `i/n` of the cells (0 <= i < n); without it, JOB_COMPLETION_INDEX/JOB_COMPLETIONS or SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT")
	metric := fs.String("metric", "", "incidence to chart: corrupted, imposters, stale-reads, misrouted, divergent or first-wrap (default corrupted)")
	quiet := fs.Bool("quiet", false, "no progress output")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "statesim sweep: want exactly one SCENARIO or built-in sweep, got %d\n", len(pos))
		return exitBadInput
	}
	spec, defined, err := sweep.Load(pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "statesim: %v\n", err)
		return exitBadInput
	}
	if defined {
		if len(vary) > 0 {
			fmt.Fprintf(stderr, "statesim sweep: %s is a sweep definition with its own axes; to vary other keys, sweep its scenario %s\n", pos[0], spec.Scenario)
			return exitBadInput
		}
		spec.Sets = append(spec.Sets, sets...)
	} else {
		var tl *infile.TooLargeError
		if _, _, _, _, rerr := scenarios.Resolve(pos[0]); errors.As(rerr, &tl) {
			fmt.Fprintf(stderr, "statesim: %v\n", rerr) // a file past its bound: say so
			return exitBadInput
		} else if rerr != nil {
			// Neither a sweep nor a scenario: most likely a typo of one.
			known := append(sweep.Names(), scenarios.Builtins()...)
			fmt.Fprintf(stderr, "statesim sweep: unknown sweep %q: not a built-in sweep (%s), a sweep .yaml file or a scenario%s\n",
				pos[0], strings.Join(sweep.Names(), ", "), scenarios.Suggest(pos[0], known))
			return exitBadInput
		}
		if len(vary) == 0 {
			fmt.Fprintf(stderr, "statesim sweep: %s is a scenario, not a sweep: give at least one --vary KEY=v1,v2,... (built-in sweeps: %s)%s\n",
				pos[0], strings.Join(sweep.Names(), ", "), scenarios.Suggest(pos[0], sweep.Names()))
			return exitBadInput
		}
		spec = &sweep.Spec{Name: sweepName(pos[0]), Scenario: pos[0], Sets: sets, Axes: vary, Seeds: 1}
	}
	seedsSet := false
	fs.Visit(func(f *flag.Flag) { seedsSet = seedsSet || f.Name == "seeds" })
	if seedsSet {
		if *seeds < 1 {
			fmt.Fprintf(stderr, "statesim sweep: --seeds must be >= 1, got %d\n", *seeds)
			return exitBadInput
		}
		spec.Seeds = *seeds
	}
	if *metric != "" {
		spec.Metric = *metric
	}
	if *workers < 1 {
		fmt.Fprintf(stderr, "statesim sweep: --workers must be >= 1, got %d\n", *workers)
		return exitBadInput
	}
	shard, err := shardOf(*shardArg, "sweep", stderr)
	if err != nil {
		return exitBadInput
	}
	if *out == "" {
		*out = filepath.Join("out", "sweep-"+spec.Name)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		// After the first Ctrl-C the running cells finish; a second one
		// kills the process (finished cells are safe on disk).
		<-ctx.Done()
		stop()
	}()
	// Loading a large grid's scenarios takes a while: Ctrl-C stops it too.
	if _, err := spec.PlanContext(ctx); errors.Is(err, sweep.ErrInterrupted) {
		fmt.Fprintln(stderr, "\nstatesim sweep: interrupted while checking the grid; nothing ran")
		return 130
	} else if err != nil {
		fmt.Fprintf(stderr, "statesim: %v\n", err)
		return exitBadInput
	}
	opt := sweep.Options{Dir: *out, Workers: *workers, Shard: shard}
	tty := isTerminal(stderr)
	if !*quiet && tty {
		// Wall-clock time only for the progress line, never in results.
		began, ran := time.Now(), 0
		opt.Progress = func(done, total int, r *sweep.Result, resumed bool) {
			how := ""
			if resumed {
				how = " (resumed)"
			} else {
				ran++
			}
			eta := ""
			if el := time.Since(began); ran > 0 && done < total {
				left := time.Duration(float64(el) / float64(ran) * float64(total-done))
				eta = fmt.Sprintf(", ~%s left", left.Round(time.Second))
			}
			fmt.Fprintf(stderr, "\r\033[K[%d/%d%s] %s%s", done, total, eta, r.Key, how)
			if done == total {
				fmt.Fprintln(stderr)
			}
		}
	}
	rs, err := spec.Run(ctx, opt)
	if errors.Is(err, sweep.ErrInterrupted) {
		fmt.Fprintf(stderr, "\nstatesim sweep: interrupted after %d cells; run the same command again to resume from %s\n", len(rs), *out)
		return 130
	}
	var de *sweep.DirError
	if errors.As(err, &de) {
		return outputFailed(stderr, "--out", de.Dir, de.Err)
	}
	if err != nil {
		fmt.Fprintf(stderr, "statesim: %v\n", err)
		return exitInternal
	}
	return writeSweep(stdout, stderr, *out, spec, rs, shard)
}

func writeSweep(stdout, stderr io.Writer, dir string, spec *sweep.Spec, rs []*sweep.Result, shard sweep.Shard) int {
	if shard.N > 1 {
		fmt.Fprintf(stdout, "shard %d/%d: %d cells in %s; join the shards with 'statesim sweep merge DIR...'\n", shard.I, shard.N, len(rs), dir)
	}
	if err := sweep.WriteTable(stdout, spec, rs); err != nil {
		fmt.Fprintf(stderr, "statesim: %v\n", err)
		return exitInternal
	}
	write := sweep.WriteOutputs
	if shard.N > 1 {
		write = sweep.WriteTables
	}
	files, err := write(dir, spec, rs)
	if isFileError(err) {
		return outputFailed(stderr, "--out", dir, err)
	}
	if err != nil {
		fmt.Fprintf(stderr, "statesim: %v\n", err)
		return exitInternal
	}
	fmt.Fprintf(stdout, "\nwrote %s\n", strings.Join(files, ", "))
	return exitClean
}

func cmdSweepMerge(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sweep merge", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "write the merged table, CSV, JSON and chart to `DIR` (default: the first DIR)")
	dirs, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(dirs) == 0 {
		fmt.Fprintln(stderr, "statesim sweep merge: want one or more shard output directories")
		return exitBadInput
	}
	spec, rs, missing, err := sweep.Merge(dirs)
	if err != nil {
		fmt.Fprintf(stderr, "statesim: %v\n", err)
		return exitBadInput
	}
	if len(missing) > 0 {
		show := missing[:min(5, len(missing))]
		fmt.Fprintf(stderr, "statesim sweep merge: %d of %d cells are in none of the directories (a shard missing or unfinished?), e.g.\n  %s\n",
			len(missing), len(missing)+len(rs), strings.Join(show, "\n  "))
		return exitBadInput
	}
	if *out == "" {
		*out = dirs[0]
	}
	return writeSweep(stdout, stderr, *out, spec, rs, sweep.Shard{})
}

// sweepName names an ad-hoc sweep after its scenario.
func sweepName(arg string) string {
	return strings.TrimSuffix(filepath.Base(arg), ".yaml")
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
