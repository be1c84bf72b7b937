package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"

	"golang.org/x/term"
	"statesim/backend"

	"statesim/model"
	"statesim/prop"
	"statesim/scenarios"
	"statesim/sched"
)

func init() {
	commands["check"] = command{
		summary: "check [--seed N] [--trials N] [--matrix] [--version V[,V]|all] [--async on,off] [--cudagraph MODE[,MODE]] [--patches +N,-N[/SET]] [--model-runner v1|v2] [--model M[,M]] [--spec METHOD[,METHOD]] [--spec-k N|LO-HI] [--bits N|LO-HI] [--property NAME]... [--set key.path=value]... [--out DIR]\n" +
			"      search generated scenarios for a property violation, shrink it, and write it as a replayable scenario",
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
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seed := fs.Int64("seed", 1, "search seed: the same seed generates the same scenarios")
	trials := fs.Int("trials", 500, "generated scenarios per property")
	versionFlag := fs.String("version", "fixed", "vLLM versions the scenarios run (comma-separated, or all: every release from v0.13): "+strings.Join(sched.VersionNames(), ", "))
	matrix := fs.Bool("matrix", false, "draw every dimension: all releases, the hybrid presets and every built-in model, spec decode off/mtp/eagle/ngram, async on/off, prefix caching off/on/align/all, CUDA graphs none/full_and_piecewise; the other flags pin one")
	var asyncs, graphs stringList
	fs.Var(&asyncs, "async", "engine.async_scheduling values to draw: on, off (comma-separated); default off")
	fs.Var(&graphs, "cudagraph", "engine.cudagraph_mode values to draw (comma-separated): none, piecewise, full_decode_only, full_and_piecewise")
	bits := fs.String("bits", "64", "state_index_bits, N or LO-HI; below 64 draws the tiny hybrid with pools of hundreds of blocks, where the wrap is reachable")
	outDir := fs.String("out", "statesim-check", "directory for shrunk counterexamples")
	shrinks := fs.Int("max-shrinks", 1000, "successful shrink steps at most per counterexample")
	backendKind := fs.String("backend", "symbolic", "backend the scenarios run on: symbolic, mock, or cuda (a binary built with `make cuda`, on a GPU)")
	var models stringList
	fs.Var(&models, "model", "models to draw (repeatable or comma-separated): presets or built-in configs, e.g. qwen3-next-80b-a3b or kimi-linear-48b-a3b (the GDN builder's models), or all (every hybrid preset and built-in config); default the hybrid presets")
	var specs, patches stringList
	fs.Var(&specs, "spec", "speculative decoding methods to draw (off, mtp, eagle, ngram; comma-separated); default off")
	specK := fs.String("spec-k", "1-4", "num_speculative_tokens, N or LO-HI (with --spec)")
	fs.Var(&patches, "patches", "engine.patches of every scenario, e.g. +55898 or +53059,-51565; SET/SET draws one of several (none: no patches), e.g. none/+55898,+53059; 'statesim patches' lists each PR and its state upstream: merged (first release) or open (as of a date)")
	var runners stringList
	fs.Var(&runners, "model-runner", "engine.model_runner values to draw (comma-separated): v1, v2, default (the release's: v2 from v0.29); the v0 control has none")
	var cacheModes stringList
	fs.Var(&cacheModes, "prefix-caching", "prefix-caching settings to draw (comma-separated: on = the release's Mamba cache mode, align, all, off); with it the prompts share prefixes (--shared ids of --hash-block tokens); default off")
	shared := fs.Int("shared", 3, "most shared hash ids per prompt (with --prefix-caching)")
	hashBlock := fs.Int("hash-block", 64, "tokens per shared hash id (with --prefix-caching)")
	var props stringList
	fs.Var(&props, "property", "property to check (repeatable or comma-separated; default all)")
	var sets setFlags
	fs.Var(&sets, "set", "override a field of every generated scenario, e.g. engine.max_num_seqs=4 (repeatable)")
	shardArg := fs.String("shard", "", "shard `i/n` of a campaign of n seeds: this process searches seed --seed + i and writes to --out/seed-S; without it, JOB_COMPLETION_INDEX/JOB_COMPLETIONS or SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if err := shardSeed(shardArg, seed, outDir, stderr); err != nil {
		return exitBadInput
	}
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "statesim check: "+format+"\n", a...)
		return exitBadInput
	}
	if len(pos) > 0 {
		return bad("unexpected argument %q (check generates its own scenarios)", pos[0])
	}
	if *trials < 1 {
		return bad("--trials must be >= 1, got %d", *trials)
	}
	if *shrinks < 1 {
		return bad("--max-shrinks must be >= 1, got %d", *shrinks)
	}
	versions, err := parseVersions(*versionFlag)
	if err != nil {
		return bad("--version: %v", err)
	}
	version := &versions[0]
	lo, hi, err := parseBits(*bits)
	if err != nil {
		return bad("--bits: %v", err)
	}
	ps, err := prop.ByName(props)
	if err != nil {
		return bad("--property: %v", err)
	}
	if len(models) == 1 && models[0] == "all" {
		models = prop.MatrixModels()
	}
	cfg := prop.DefaultConfig()
	if lo < 64 {
		cfg = prop.BugB()
	} else if *version != "fixed" && *version != "v0" {
		cfg = prop.BugA(*version)
	}
	switch {
	case len(models) > 0 && lo < 64:
		cfg.Presets = models
	case len(models) > 0:
		// Named models draw prompts from one token: a brand-new 1-token
		// prompt is the GDN builder's imposter (vLLM issue #51562).
		cfg = prop.GDN(*version, models...)
	case lo == 64:
		// By default the search also covers the GDN builder's models,
		// after the presets (choices shrink towards the front), and
		// prompts from one token, their imposter's usual trigger.
		cfg.Presets = append(slices.Clone(cfg.Presets), prop.GDNModels...)
		cfg.MinPrompt = 1
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if *matrix {
		cfg = prop.Matrix(cfg)
		if len(models) > 0 {
			cfg.Presets = models
		}
	}
	if !*matrix || given["version"] {
		cfg.Versions = versions
	}
	// A model some drawn release does not serve (Kimi-K3 before v0.27) is
	// bad input, not a counterexample. Unknown names are the search's to
	// report.
	for _, m := range cfg.Presets {
		sh, err := model.Preset(m)
		if err != nil {
			if sh, err = scenarios.ReadHFConfig(m, ""); err != nil {
				continue
			}
		}
		for _, v := range cfg.Versions {
			if err := scenarios.Serves(&sh, v); err != nil {
				return bad("--model %s: %v", m, err)
			}
		}
	}
	cfg.MinBits, cfg.MaxBits = lo, hi
	if len(patches) > 0 {
		sets, err := parsePatchSets(patches)
		if err != nil {
			return bad("--patches: %v", err)
		}
		for _, v := range cfg.Versions {
			r, _ := sched.ParseVersion(v)
			for _, set := range sets {
				if len(set) == 0 {
					continue
				}
				if _, err := sched.Patched(r, set); err != nil {
					return bad("--patches: %s: %v", v, err)
				}
			}
		}
		if len(sets) == 1 {
			cfg.Patches = sets[0]
		} else {
			cfg.PatchSets = sets
		}
	}
	if len(runners) > 0 {
		var rs []string
		for _, r := range runners {
			if r == "default" {
				r = ""
			} else if _, err := sched.ParseRunner(r); err != nil {
				return bad("--model-runner: %v (or default)", err)
			}
			rs = append(rs, r)
		}
		if len(cfg.Versions) == 1 && cfg.Versions[0] == "v0" {
			return bad("--model-runner: the v0 control has no V1 engine model runner")
		}
		if len(rs) == 1 {
			cfg.ModelRunner = rs[0]
		} else {
			cfg.ModelRunners = rs
		}
	}
	if len(specs) > 0 || *matrix && given["spec-k"] {
		klo, khi, err := parseRange(*specK, 1, 16, "")
		if err != nil {
			return bad("--spec-k: %v", err)
		}
		if len(specs) == 0 {
			specs = cfg.SpecMethods
		}
		cfg = prop.Spec(cfg, klo, khi, specs...)
		if err := cfg.Validate(); err != nil {
			return bad("--spec: %v", err)
		}
	}
	if len(cacheModes) > 0 {
		var modes []string
		for _, m := range cacheModes {
			if m == "off" {
				m = ""
			}
			modes = append(modes, m)
		}
		cfg = prop.Prefix(cfg, *hashBlock, *shared, modes...)
		// Asked for by name, align keeps prefix caching under spec decode
		// on a hybrid (the pair vLLM runs); the matrix's draws stay as
		// they were.
		cfg.SpecAlign = !*matrix
		if err := cfg.Validate(); err != nil {
			return bad("--prefix-caching: %v", err)
		}
	}
	if len(asyncs) > 0 {
		cfg.Async = nil
		for _, a := range asyncs {
			if a != "on" && a != "off" {
				return bad("--async: %q: want on or off", a)
			}
			cfg.Async = append(cfg.Async, a == "on")
		}
	}
	if len(graphs) > 0 {
		cfg.CUDAGraphModes = graphs
		if err := cfg.Validate(); err != nil {
			return bad("--cudagraph: %v", err)
		}
	}
	if err := cfg.Validate(); err != nil && len(models) > 0 {
		return bad("--model: %v", err)
	}
	switch *backendKind {
	case "symbolic":
	case "mock", "cuda":
		if ok, why := backend.Available(*backendKind); !ok {
			return bad("--backend %s: %s", *backendKind, why)
		}
		cfg = prop.Numeric(cfg, *backendKind)
	default:
		return bad("--backend: unknown %q (want symbolic, mock or cuda)", *backendKind)
	}

	dir, err := prop.TempDir()
	if err != nil {
		fmt.Fprintf(stderr, "statesim check: %v\n", err)
		return exitInternal
	}
	defer os.RemoveAll(dir)
	r := prop.NewRunner(dir, sets)
	if err := validateSets(r, cfg, *seed); err != nil {
		fmt.Fprintf(stderr, "statesim check: %v\n", err)
		return exitBadInput
	}

	fmt.Fprintf(stdout, "statesim check: seed %d, %d trials per property, vLLM %s, %s-bit state index", *seed, *trials, strings.Join(cfg.Versions, ","), *bits)
	if *matrix {
		fmt.Fprintf(stdout, ", matrix")
	}
	if len(asyncs) > 0 {
		fmt.Fprintf(stdout, ", async %s", asyncs.String())
	}
	if len(graphs) > 0 {
		fmt.Fprintf(stdout, ", cudagraph_mode %s", graphs.String())
	}
	if len(models) > 0 {
		fmt.Fprintf(stdout, ", models %s", strings.Join(models, ", "))
	}
	if len(patches) > 0 {
		fmt.Fprintf(stdout, ", patches %s", strings.Join(patches, ","))
	}
	if len(runners) > 0 {
		fmt.Fprintf(stdout, ", model runner %s", runners.String())
	}
	if len(specs) > 0 {
		fmt.Fprintf(stdout, ", speculative %s K %s", strings.Join(specs, ","), *specK)
	}
	if len(sets) > 0 {
		fmt.Fprintf(stdout, ", --set %s", strings.Join(sets, " --set "))
	}
	fmt.Fprintln(stdout)
	if n := guardNote(cfg); n != "" {
		fmt.Fprintln(stdout, n)
	}

	var bar *progressbar.ProgressBar
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		bar = progressbar.NewOptions(*trials*len(ps), progressbar.OptionSetWriter(stderr),
			progressbar.OptionSetDescription("checking"), progressbar.OptionShowCount(), progressbar.OptionClearOnFinish(),
			progressbar.OptionThrottle(100*time.Millisecond))
	}
	failed := 0
	for _, p := range ps {
		if bar != nil {
			bar.Describe(p.Name)
		}
		opt := prop.Options{Seed: *seed, Trials: *trials, MaxShrinks: *shrinks}
		if bar != nil {
			opt.OnTrial = func(string, int) { bar.Add(1) }
		}
		res, err := prop.Check(r, cfg, p, opt)
		if bar != nil && res.Trials < *trials {
			bar.Add(*trials - res.Trials)
		}
		if err != nil {
			if bar != nil {
				bar.Clear()
			}
			fmt.Fprintf(stderr, "statesim check: %v\n", err)
			return exitInternal
		}
		if bar != nil {
			bar.Clear()
		}
		switch {
		case res.Unavailable:
			fmt.Fprintf(stdout, "  %-26s skipped: %v\n", p.Name, res.Err)
		case res.Holds:
			fmt.Fprintf(stdout, "  %-26s ok (%d scenarios)\n", p.Name, res.Trials)
		default:
			failed++
			if err := reportFailure(stdout, r, res, *outDir, *seed, args); err != nil {
				// The counterexample is lost unless it is written: an
				// unwritable --out is bad input, not a finding.
				fmt.Fprintf(stderr, "statesim check: --out %s: could not write the counterexample: %v\n", *outDir, err)
				return exitBadInput
			}
		}
	}
	if bar != nil {
		bar.Finish()
	}
	if failed > 0 {
		fmt.Fprintf(stdout, "%d of %d properties FAIL\n", failed, len(ps))
		return exitViolations
	}
	return exitClean
}

func reportFailure(w io.Writer, r *prop.Runner, res prop.Result, outDir string, seed int64, args []string) error {
	fmt.Fprintf(w, "  %-26s FAIL on scenario %d of seed %d; %d shrinks (%d runs)\n", res.Property, res.Trials, seed, res.Shrinks, res.Runs)
	fmt.Fprintf(w, "      %s\n", res.Err)
	fmt.Fprintf(w, "      shrunk: %s", res.Shrunk)
	if len(r.Sets) > 0 {
		fmt.Fprintf(w, ", then --set %s", strings.Join(r.Sets, " --set "))
	}
	fmt.Fprintln(w)
	name := strings.ReplaceAll(res.Property, "/", "-")
	foundBy := "statesim check " + strings.Join(quoteArgs(args), " ")
	wr, err := prop.Write(r, res, outDir, name, strings.TrimSpace(foundBy))
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "      wrote %s (requests in %s), expect: %s\n", wr.YAML, filepath.Base(wr.JSONL), strings.Join(wr.Expect, " "))
	fmt.Fprintf(w, "      replay: statesim run %s\n", wr.YAML)
	return nil
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

// parseBits reads N or LO-HI within 16..64.
func parseBits(s string) (lo, hi int, err error) {
	return parseRange(s, 16, 64, " (32 = vLLM before PR #35275, 64 = fixed)")
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

// parseVersions reads a comma-separated list of vllm_version names, or
// all: every V1 release modelled.
func parseVersions(s string) ([]string, error) {
	if s == "all" {
		return prop.Releases(), nil
	}
	var out []string
	for _, v := range strings.Split(s, ",") {
		v = strings.TrimSpace(v)
		if _, err := sched.ParseVersion(v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// parsePatchSets reads --patches: one set, or several separated by "/"
// (none: the release as shipped).
func parsePatchSets(list []string) ([][]string, error) {
	var sets [][]string
	var cur []string
	for _, p := range list {
		for i, part := range strings.Split(p, "/") {
			if i > 0 {
				sets, cur = append(sets, cur), nil
			}
			if part = strings.TrimSpace(part); part != "" && part != "none" {
				cur = append(cur, part)
			}
		}
	}
	sets = append(sets, cur)
	for _, set := range sets {
		for _, p := range set {
			if !strings.HasPrefix(p, "+") && !strings.HasPrefix(p, "-") {
				return nil, fmt.Errorf("%q: want +N or -N", p)
			}
		}
	}
	return sets, nil
}

// parseRange reads N or LO-HI within [lo0, hi0]; note ends the
// out-of-range message.
func parseRange(s string, lo0, hi0 int, note string) (lo, hi int, err error) {
	a, b, isRange := strings.Cut(s, "-")
	if lo, err = strconv.Atoi(a); err != nil {
		return 0, 0, fmt.Errorf("want N or LO-HI, got %q", s)
	}
	hi = lo
	if isRange {
		if hi, err = strconv.Atoi(b); err != nil {
			return 0, 0, fmt.Errorf("want N or LO-HI, got %q", s)
		}
	}
	if lo < lo0 || hi > hi0 || hi < lo {
		return 0, 0, fmt.Errorf("%q is outside %d..%d%s", s, lo0, hi0, note)
	}
	return lo, hi, nil
}

// guardNote says when +53059 is inert in some of the scenarios cfg draws:
// the PR edits V1's GPUModelRunner._is_uniform_decode, and under Model
// Runner V2 (set, or the release's default) the dispatch stays shape-only.
func guardNote(cfg prop.Config) string {
	sets := cfg.PatchSets
	if len(sets) == 0 {
		sets = [][]string{cfg.Patches}
	}
	runners := cfg.ModelRunners
	if len(runners) == 0 {
		runners = []string{cfg.ModelRunner}
	}
	var inert []string
	for _, v := range cfg.Versions {
		if v == "v0" {
			continue
		}
	search:
		for _, set := range sets {
			for _, r := range runners {
				sc := scenarios.Defaults()
				sc.Engine.VLLMVersion, sc.Engine.ModelRunner, sc.Engine.Patches = v, r, set
				if sc.GuardIgnored() {
					inert = append(inert, v)
					break search
				}
			}
		}
	}
	if len(inert) == 0 {
		return ""
	}
	return "note: +53059 changes nothing under model runner v2 (the default from v0.29 unless --model-runner v1), here at " + strings.Join(inert, ",") + ": it edits V1's GPUModelRunner._is_uniform_decode only"
}
