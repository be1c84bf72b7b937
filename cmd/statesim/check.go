package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"

	"golang.org/x/term"

	"statesim/prop"
	"statesim/scenarios"
	"statesim/sched"
	"statesim/sweep"
)

func init() {
	commands["check"] = command{
		summary: "check [--seed N] [--trials N] [--matrix] [--version V[,V]|all] [--async on,off] [--cudagraph MODE[,MODE]] [--patches +N,-N[/SET]] [--model-runner v1|v2] [--kv-connector NAME] [--model M[,M]] [--spec METHOD[,METHOD]] [--spec-k N|LO-HI] [--draft L:H:D:W] [--prompt-len N|LO-HI] [--prefix-match-unit N] [--bits N|LO-HI] [--property NAME]... [--set key.path=value]... [--out DIR] [--shard i/n]\n" +
			"  statesim check merge DIR...   (the shards' --out directories, or the campaign's)\n" +
			"      search generated scenarios for a property violation, shrink it, and write it as a replayable scenario, with the run's verdict in --out/check.json",
		run: cmdCheck,
	}
}

// stringList collects a repeatable flag that also takes comma lists.
type stringList []string

func (s *stringList) String() string { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error {
	for _, x := range strings.Split(v, ",") {
		if x = strings.TrimSpace(x); x != "" {
			*s = append(*s, x)
		}
	}
	return nil
}

func cmdCheck(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "merge" {
		return cmdCheckMerge(args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	plan, outDir := checkFlags(fs)
	var sets setFlags
	fs.Var(&sets, "set", "override a field of every generated scenario, e.g. engine.max_num_seqs=4 (repeatable)")
	shardArg := fs.String("shard", "", "shard `i/n` of a campaign of n seeds: this process searches seed --seed + i and writes to --out/seed-S; without it, JOB_COMPLETION_INDEX/JOB_COMPLETIONS or SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	shard, err := shardSeed(shardArg, &plan.Seed, outDir, stderr)
	if err != nil {
		return exitBadInput
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "statesim check: unexpected argument %q (check generates its own scenarios)\n", pos[0])
		return exitBadInput
	}
	plan.Given = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { plan.Given[f.Name] = true })
	search, err := plan.Settle()
	if err != nil {
		fmt.Fprintf(stderr, "statesim check: %v\n", err)
		return exitBadInput
	}
	dir, err := prop.TempDir()
	if err != nil {
		fmt.Fprintf(stderr, "statesim check: %v\n", err)
		return exitInternal
	}
	defer os.RemoveAll(dir)
	r := prop.NewRunner(dir, sets)
	if err := validateSets(r, search.Config, plan.Seed); err != nil {
		fmt.Fprintf(stderr, "statesim check: %v\n", err)
		return exitBadInput
	}
	fmt.Fprintln(stdout, plan.Describe(search, sets))
	// A summary left by an earlier run would read as this one's verdict
	// if this one never finished.
	os.Remove(filepath.Join(*outDir, prop.SummaryName))
	sum := prop.NewSummary(plan, search, sets, shard.I, shard.N)
	return runSearch(r, search, *outDir, foundBy(args, shard, plan.Seed), sum, stdout, stderr)
}

// checkFlags defines check's flags over a search plan.
func checkFlags(fs *flag.FlagSet) (*prop.Plan, *string) {
	p := &prop.Plan{}
	fs.Int64Var(&p.Seed, "seed", 1, "search seed: the same seed generates the same scenarios")
	fs.IntVar(&p.Trials, "trials", 500, "generated scenarios per property")
	fs.StringVar(&p.Versions, "version", "fixed", "vLLM versions the scenarios run (comma-separated, or all: every release from v0.13): "+strings.Join(sched.VersionNames(), ", "))
	fs.BoolVar(&p.Matrix, "matrix", false, "draw every dimension: all releases, the hybrid presets and every built-in model, spec decode off/mtp/eagle/ngram, async on/off, prefix caching off/on/align/all, CUDA graphs none/full_and_piecewise; the other flags pin one")
	fs.Var((*stringList)(&p.Async), "async", "engine.async_scheduling values to draw: on, off (comma-separated); default off")
	fs.Var((*stringList)(&p.Graphs), "cudagraph", "engine.cudagraph_mode values to draw (comma-separated): none, piecewise, full_decode_only, full_and_piecewise")
	fs.StringVar(&p.Bits, "bits", "64", "state_index_bits, N or LO-HI; below 64 draws the tiny hybrid with pools of hundreds of blocks, where the wrap is reachable")
	outDir := fs.String("out", "statesim-check", "directory for shrunk counterexamples")
	fs.IntVar(&p.MaxShrinks, "max-shrinks", 1000, "successful shrink steps at most per counterexample")
	fs.StringVar(&p.Backend, "backend", "symbolic", "backend the scenarios run on: symbolic, mock, or cuda (a binary built with `make cuda`, on a GPU)")
	fs.Var((*stringList)(&p.Models), "model", "models to draw (repeatable or comma-separated): presets or built-in configs, e.g. qwen3-next-80b-a3b or kimi-linear-48b-a3b (the GDN builder's models), or all (every hybrid preset and built-in config); default the hybrid presets")
	fs.Var((*stringList)(&p.Specs), "spec", "speculative decoding methods to draw (off, mtp, eagle, ngram, dflash with --draft; comma-separated); default off")
	fs.StringVar(&p.SpecK, "spec-k", "1-4", "num_speculative_tokens, N or LO-HI (with --spec)")
	fs.StringVar(&p.Draft, "draft", "", "the DFlash drafter of --spec dflash: LAYERS:KV_HEADS:HEAD_DIM:WINDOW, its config.json's num_hidden_layers, num_key_value_heads, head_dim, sliding_window")
	fs.StringVar(&p.PromptLen, "prompt-len", "", "prompt lengths to draw, N or LO-HI (default the search's own, from 1 or 2 up to 160 or 2048)")
	fs.Var((*stringList)(&p.Patches), "patches", "engine.patches of every scenario, e.g. +55898 or +53059,-51565; SET/SET draws one of several (none: no patches), e.g. none/+55898,+53059; 'statesim patches' lists each PR and its state upstream: merged (first release) or open (as of a date)")
	fs.StringVar(&p.KVConnector, "kv-connector", "", "engine.kv_transfer_config.kv_connector of every scenario: NixlConnector, OffloadingConnector or LMCacheConnectorV1 (attention-only models); only the scheduler's local hit is modelled, every external hit is 0")
	fs.Var((*stringList)(&p.Runners), "model-runner", "engine.model_runner values to draw (comma-separated): v1, v2, default (the release's: v2 from v0.29); the v0 control has none")
	fs.Var((*stringList)(&p.PrefixCaching), "prefix-caching", "prefix-caching settings to draw (comma-separated: on = the release's Mamba cache mode, align, all, off); with it the prompts share prefixes (--shared ids of --hash-block tokens); default off")
	fs.IntVar(&p.Shared, "shared", 3, "most shared hash ids per prompt (with --prefix-caching)")
	fs.IntVar(&p.HashBlock, "hash-block", 64, "tokens per shared hash id (with --prefix-caching)")
	fs.IntVar(&p.PrefixMatchUnit, "prefix-match-unit", 0, "engine.prefix_match_unit `N` (tokens) where vLLM takes it: releases with #46384 (v0.28 on), prefix caching in align mode, N dividing every KV cache group's block; 0: unset (with --prefix-caching)")
	fs.Var((*stringList)(&p.Properties), "property", "property to check (repeatable or comma-separated; default all)")
	return p, outDir
}

// foundBy is the counterexamples' "Found by" line: the command and the
// seed it searched, which a shard's environment may have chosen.
func foundBy(args []string, shard sweep.Shard, seed int64) string {
	by := strings.TrimSpace("statesim check "+strings.Join(quoteArgs(args), " ")) + fmt.Sprintf(" (search seed %d", seed)
	if shard.N > 1 {
		by += fmt.Sprintf(": shard %d/%d", shard.I, shard.N)
	}
	return by + ")"
}

// runSearch checks each property in turn, with a progress bar on a
// terminal, writes the first counterexample of each that fails, and when
// every property is judged, the summary (outDir/check.json).
func runSearch(r *prop.Runner, s *prop.Search, outDir, foundBy string, sum *prop.Summary, stdout, stderr io.Writer) int {
	failed := 0
	code := checkEach(r, s.Config, s.Properties, s.Options, "check", stderr, func(p prop.Property, res prop.Result) int {
		file := ""
		switch {
		case res.Unavailable:
			fmt.Fprintf(stdout, "  %-26s skipped: %v\n", p.Name, res.Err)
		case res.Holds:
			fmt.Fprintf(stdout, "  %-26s ok (%d scenarios)\n", p.Name, res.Trials)
		default:
			failed++
			var err error
			if file, err = reportFailure(stdout, r, res, outDir, s.Options.Seed, foundBy); err != nil {
				// The counterexample is lost unless it is written: an
				// unwritable --out is bad input, not a finding.
				fmt.Fprintf(stderr, "statesim check: --out %s: could not write the counterexample: %v\n", outDir, err)
				return exitBadInput
			}
		}
		sum.Add(res, file)
		return exitClean
	})
	if code != exitClean {
		return code
	}
	path, err := prop.WriteSummary(outDir, sum)
	if err != nil {
		return outputFailed(stderr, "--out", outDir, err)
	}
	if c := sum.Campaign; c.Shards > 1 {
		fmt.Fprintf(stdout, "shard %d/%d: verdict in %s; join the shards with 'statesim check merge %s'\n", sum.Shard, c.Shards, path, filepath.Dir(outDir))
	}
	if failed > 0 {
		fmt.Fprintf(stdout, "%d of %d properties FAIL\n", failed, len(s.Properties))
		return exitViolations
	}
	return exitClean
}

// checkEach searches each property in turn under opt, with a progress
// bar on a terminal, and hands each result to done; it stops at the first
// non-clean status done returns, or at a search error (exitInternal,
// reported as statesim cmd's).
func checkEach(r *prop.Runner, cfg prop.Config, ps []prop.Property, opt prop.Options, cmd string, stderr io.Writer, done func(prop.Property, prop.Result) int) int {
	var bar *progressbar.ProgressBar
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		bar = progressbar.NewOptions(opt.Trials*len(ps), progressbar.OptionSetWriter(stderr),
			progressbar.OptionSetDescription("checking"), progressbar.OptionShowCount(), progressbar.OptionClearOnFinish(),
			progressbar.OptionThrottle(100*time.Millisecond))
	}
	for _, p := range ps {
		o := opt
		if bar != nil {
			bar.Describe(p.Name)
			o.OnTrial = func(string, int) { bar.Add(1) }
		}
		res, err := prop.Check(r, cfg, p, o)
		if bar != nil {
			if res.Trials < opt.Trials {
				bar.Add(opt.Trials - res.Trials)
			}
			bar.Clear()
		}
		if err != nil {
			fmt.Fprintf(stderr, "statesim %s: %v\n", cmd, err)
			return exitInternal
		}
		if code := done(p, res); code != exitClean {
			return code
		}
	}
	if bar != nil {
		bar.Finish()
	}
	return exitClean
}

// reportFailure prints and writes a counterexample, and returns its file
// name in outDir.
func reportFailure(w io.Writer, r *prop.Runner, res prop.Result, outDir string, seed int64, foundBy string) (string, error) {
	fmt.Fprintf(w, "  %-26s FAIL on scenario %d of seed %d; %d shrinks (%d runs)\n", res.Property, res.Trials, seed, res.Shrinks, res.Runs)
	fmt.Fprintf(w, "      %s\n", res.Err)
	fmt.Fprintf(w, "      shrunk: %s", res.Shrunk)
	if len(r.Sets) > 0 {
		fmt.Fprintf(w, ", then --set %s", strings.Join(r.Sets, " --set "))
	}
	fmt.Fprintln(w)
	name := strings.ReplaceAll(res.Property, "/", "-")
	wr, err := prop.Write(r, res, outDir, name, foundBy)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(w, "      wrote %s (requests in %s), expect: %s\n", wr.YAML, filepath.Base(wr.JSONL), strings.Join(wr.Expect, " "))
	fmt.Fprintf(w, "      replay: statesim run %s\n", wr.YAML)
	return filepath.Base(wr.YAML), nil
}

func quoteArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, " \t'\"$") {
			a = strconv.Quote(a)
		}
		out[i] = a
	}
	return out
}

// validateSets builds one generated scenario with the overrides so a bad
// --set is reported as bad input before the search starts.
func validateSets(r *prop.Runner, cfg prop.Config, seed int64) error {
	if len(r.Sets) == 0 {
		return nil
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	p := prop.Sample(cfg, seed)
	_, err := r.Build(p, "generated")
	var ie *scenarios.InputError
	if err != nil && !errors.As(err, &ie) {
		return fmt.Errorf("--set: %w", err)
	}
	return err
}
