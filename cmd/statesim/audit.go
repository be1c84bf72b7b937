package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"statesim/engine"
	"statesim/knownbugs"
	"statesim/prop"
	"statesim/scenarios"
	"statesim/setup"
	"statesim/vllmargs"
)

func init() {
	commands["audit"] = command{
		summary: "audit [--version V] [--device NAME] [--trace FILE] [--strict] [--json] [--seed N] [--trials N] [--out DIR] [--set k=v]... -- vllm serve MODEL [vLLM flags]\n" +
			"      audit one vLLM deployment from its command line: what vLLM decides at start-up, the known bugs that can hit it, and a property search in its configuration\n" +
			"      (exit 1 when a known bug applies, the search finds a counterexample or the --trace replay breaks an invariant)",
		run: cmdAudit,
	}
}

// auditView is `statesim audit --json`.
type auditView struct {
	Version      string              `json:"vllm_version"`
	Model        string              `json:"model"`
	ModelSource  string              `json:"model_source"`
	Settings     []vllmargs.Setting  `json:"settings"`
	Defaults     []vllmargs.Setting  `json:"vllm_defaults_applied"`
	Ignored      []vllmargs.Ignored  `json:"ignored"`
	ScenarioYAML string              `json:"scenario_yaml"`
	Startup      modelView           `json:"startup"`
	KnownBugs    []knownbugs.Verdict `json:"known_bugs"`
	Search       *auditSearch        `json:"search,omitempty"`
	Replay       *auditReplay        `json:"replay,omitempty"`
	Verdict      string              `json:"verdict"`
	Exit         int                 `json:"exit"`
}

// auditReplay is the --trace replay's outcome.
type auditReplay struct {
	Trace      string `json:"trace"`
	Violations int64  `json:"violations"`
}

type auditSearch struct {
	Seed       int64               `json:"seed"`
	Trials     int                 `json:"trials_per_property"`
	Properties []auditPropertyView `json:"properties"`
}

type auditPropertyView struct {
	Name           string `json:"name"`
	Result         string `json:"result"` // ok, FAIL, skipped
	Scenarios      int    `json:"scenarios"`
	Failure        string `json:"failure,omitempty"`
	Shrunk         string `json:"shrunk,omitempty"`
	Counterexample string `json:"counterexample,omitempty"`
}

// maxConfigFile bounds a --config file (vLLM's are a few hundred bytes).
const maxConfigFile = 1 << 20

func readVLLMConfig(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() || st.Size() > maxConfigFile {
		return nil, fmt.Errorf("%s: not a regular file of at most %d bytes", path, maxConfigFile)
	}
	return os.ReadFile(path)
}

func cmdAudit(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("audit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	version := fs.String("version", "", "the vLLM release to audit (v0.22, 0.22.1, ...; default: --version among the vLLM arguments, else the newest modelled)")
	device := fs.String("device", "", "the GPU each rank runs on (A10G, L4, A100-40GB, L40S, A100-80GB, H100-80GB, H100-94GB, H200, B200); default H200")
	tracePath := fs.String("trace", "", "a request log (CSV or JSONL, see README 'Real traces') to replay in the derived configuration, after the search")
	strict := fs.Bool("strict", false, "refuse a vLLM argument statesim does not model instead of listing it as ignored")
	asJSON := fs.Bool("json", false, "print the audit as JSON")
	seed := fs.Int64("seed", 1, "search seed")
	trials := fs.Int("trials", 3000, "generated scenarios per property (0: no search)")
	outDir := fs.String("out", "statesim-audit", "directory for shrunk counterexamples")
	var sets setFlags
	fs.Var(&sets, "set", "override a field of the derived scenario, e.g. engine.state_index_bits=32 (repeatable)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: statesim %s\n\nflags:\n", commands["audit"].summary)
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), "\n", exitStatusHelp)
	}
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "statesim audit: "+format+"\n", a...)
		return exitBadInput
	}
	tail := fs.Args()
	if len(tail) == 0 {
		return bad("no vLLM command line: statesim audit [flags] -- vllm serve MODEL [vLLM flags]")
	}
	if *trials < 0 {
		return bad("--trials must be >= 0, got %d", *trials)
	}
	cmd, err := vllmargs.Parse(tail, readVLLMConfig)
	if err != nil {
		return bad("%v", err)
	}
	if *strict && len(cmd.Ignored) > 0 {
		var b strings.Builder
		for _, ig := range cmd.Ignored {
			fmt.Fprintf(&b, "\n  %s %s (%s): %s", ig.Flag, ig.Value, ig.Origin, ig.Why)
		}
		return bad("--strict: %d vLLM arguments statesim does not model:%s", len(cmd.Ignored), b.String())
	}
	tr, err := cmd.Scenario(vllmargs.Options{Version: *version, Device: *device, Trace: *tracePath})
	if err != nil {
		return bad("%v", err)
	}
	st, err := setup.Parse(tr.YAML, "vllm serve", sets)
	if err != nil {
		var ie *scenarios.InputError
		if errors.As(err, &ie) && ie.Set == "" {
			if f, ok := tr.Keys[ie.Path]; ok {
				return bad("%s (%s): %s", f, ie.Path, ie.Msg)
			}
			return bad("%s: %s", ie.Path, ie.Msg)
		}
		return bad("%v", err)
	}
	v := &auditView{Version: tr.Version, Model: cmd.Model, ModelSource: tr.ModelSource, Settings: cmd.Settings,
		Defaults: tr.Defaults, Ignored: cmd.Ignored, ScenarioYAML: string(tr.YAML), Startup: describeModel(st)}
	sc := st.Scenario
	if v.KnownBugs, err = knownbugs.Judge(st); err != nil {
		fmt.Fprintf(stderr, "statesim audit: %v\n", err)
		return exitInternal
	}
	applies := 0
	for _, kb := range v.KnownBugs {
		if kb.Applies {
			applies++
		}
	}
	var text strings.Builder
	if !*asJSON {
		writeAuditHead(&text, v)
		if _, err := io.WriteString(stdout, text.String()); err != nil {
			return exitInternal
		}
	}
	found := 0
	if *trials > 0 {
		s, n, code := auditSearchRun(st, tr, *seed, *trials, *outDir, args, stdout, stderr, *asJSON)
		if code != exitClean {
			return code
		}
		v.Search, found = s, n
	}
	if *tracePath != "" {
		// The request log, replayed in the derived configuration.
		rep, err := engine.Run(sc, engine.Options{})
		if err != nil {
			return reportRunError(stderr, err)
		}
		v.Replay = &auditReplay{Trace: *tracePath, Violations: rep.TotalViolations()}
		if !*asJSON {
			fmt.Fprintf(stdout, "\n4. replay of %s in this configuration:\n", *tracePath)
			var b strings.Builder
			if err := rep.WriteText(&b); err != nil {
				return exitInternal
			}
			for _, ln := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
				fmt.Fprintf(stdout, "  %s\n", ln)
			}
		}
	}
	v.Verdict, v.Exit = auditVerdict(applies, found, v.Search, v.Replay, *outDir)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(v); err != nil {
			return exitInternal
		}
		return v.Exit
	}
	fmt.Fprintf(stdout, "\nverdict: %s\n", v.Verdict)
	return v.Exit
}

func auditVerdict(applies, found int, s *auditSearch, replay *auditReplay, outDir string) (string, int) {
	var parts []string
	if replay != nil && replay.Violations > 0 {
		parts = append(parts, fmt.Sprintf("replaying %s broke %d invariant(s)", replay.Trace, replay.Violations))
	}
	if applies > 0 {
		parts = append(parts, fmt.Sprintf("%d known bug(s) can hit this deployment", applies))
	}
	if found > 0 {
		parts = append(parts, fmt.Sprintf("the search found %d failing propert(ies), counterexamples in %s", found, outDir))
	}
	if len(parts) > 0 {
		return "FOUND: " + strings.Join(parts, "; "), exitViolations
	}
	if s == nil {
		return "clean: no known bug applies (no search run: --trials 0)", exitClean
	}
	return fmt.Sprintf("clean: no known bug applies and the search found nothing in %d scenarios per property (seed %d)", s.Trials, s.Seed), exitClean
}

func writeAuditHead(b *strings.Builder, v *auditView) {
	p := func(format string, a ...any) { fmt.Fprintf(b, format+"\n", a...) }
	p("statesim audit: vllm serve %s at vLLM %s", v.Model, v.Version)
	p("model: %s", v.ModelSource)
	if len(v.Settings) > 0 {
		p("\nvLLM arguments modelled:")
		for _, s := range v.Settings {
			p("  %-40s %s = %v%s", s.Flag, s.Key, s.Value, originNote(s.Origin))
		}
	}
	if len(v.Defaults) > 0 {
		p("vLLM's defaults applied (statesim's own differ):")
		for _, s := range v.Defaults {
			p("  %-40s %s = %v (%s)", s.Flag, s.Key, s.Value, s.Origin)
		}
	}
	if len(v.Ignored) > 0 {
		p("ignored (not modelled; --strict refuses them):")
		for _, ig := range v.Ignored {
			val := ""
			if ig.Value != "" {
				val = " " + ig.Value
			}
			p("  %s%s: %s%s", ig.Flag, val, ig.Why, originNote(ig.Origin))
		}
	}
	p("\nthe scenario (keep it, edit it, `statesim run` it):")
	for _, ln := range strings.Split(strings.TrimRight(v.ScenarioYAML, "\n"), "\n") {
		p("  %s", ln)
	}
	p("\n1. what vLLM decides at start-up:")
	var m strings.Builder
	_ = writeModelText(&m, &v.Startup)
	for _, ln := range strings.Split(strings.TrimRight(m.String(), "\n"), "\n") {
		p("  %s", ln)
	}
	p("\n2. known bugs (docs/bugs.md) that can hit it:")
	n := 0
	for _, kb := range v.KnownBugs {
		if !kb.Applies {
			continue
		}
		n++
		p("  %s [%s]: %s", kb.Bug.Title, kb.Bug.Refs, kb.Bug.Trigger)
		p("      closed by: %s", kb.Bug.FixedBy)
		p("      search: %s", kb.Bug.Search)
	}
	if n == 0 {
		p("  none of the %d rows applies", len(v.KnownBugs))
	}
}

func originNote(o string) string {
	if o == "" || o == "command line" {
		return ""
	}
	return " (" + o + ")"
}

// auditConfig is the search pinned to the deployment: its model, release,
// patches, model runner, CUDA-graph mode, speculative method and K, async
// scheduling, prefix caching mode, chunked prefill and policy. Budgets,
// pools and requests are drawn small, as `statesim check` draws them.
func auditConfig(st *setup.Setup, modelName string) (prop.Config, error) {
	sc := st.Scenario
	e := &sc.Engine
	cfg := prop.GDN(e.VLLMVersion, modelName) // prompts from 1 token
	cfg.Policies = []string{e.SchedulingPolicy}
	cfg.ChunkedPrefill = []bool{e.EnableChunkedPrefill}
	cfg.Patches = e.Patches
	cfg.ModelRunner = e.ModelRunner
	cfg.CUDAGraphMode = e.CUDAGraphMode
	cfg.Async = []bool{e.AsyncScheduling}
	if e.LongPrefillTokenThreshold == 0 {
		cfg.MaxLongPrefill = 0
	}
	cfg.MinBits, cfg.MaxBits = e.StateIndexBits, e.StateIndexBits
	if sp := e.Speculative; sp.Method != "" {
		cfg = prop.Spec(cfg, sp.NumSpeculativeTokens, sp.NumSpeculativeTokens, sp.Method)
	}
	if st.Mamba.PrefixCaching {
		mode := e.MambaCacheMode
		if mode == "" || mode == "none" {
			mode = "on" // the release's own choice
		}
		cfg = prop.Prefix(cfg, 64, 3, mode)
		cfg.SpecAlign = true
	}
	return cfg, cfg.Validate()
}

// auditSearchRun runs every property over the pinned configuration; it
// returns the results, how many failed, and a non-zero exit status on an
// error that ends the audit.
func auditSearchRun(st *setup.Setup, tr *vllmargs.Translation, seed int64, trials int, outDir string, args []string, stdout, stderr io.Writer, quiet bool) (*auditSearch, int, int) {
	name := st.Scenario.Model.Preset
	if name == "" {
		name = tr.HFConfig
	}
	cfg, err := auditConfig(st, name)
	if err != nil {
		fmt.Fprintf(stderr, "statesim audit: the search cannot draw this configuration: %v\n", err)
		return nil, 0, exitBadInput
	}
	dir, err := prop.TempDir()
	if err != nil {
		fmt.Fprintf(stderr, "statesim audit: %v\n", err)
		return nil, 0, exitInternal
	}
	defer os.RemoveAll(dir)
	r := prop.NewRunner(dir, nil)
	// A property that narrows the draw to another model or backend (the
	// numeric log-prob comparison runs float32 presets on the mock) does
	// not search this deployment.
	var ps []prop.Property
	for _, p := range prop.All() {
		if p.Narrow == nil {
			ps = append(ps, p)
		}
	}
	s := &auditSearch{Seed: seed, Trials: trials}
	if !quiet {
		fmt.Fprintf(stdout, "\n3. property search in this configuration (seed %d, %d scenarios per property; budgets, pools and requests drawn small):\n", seed, trials)
	}
	foundBy := "statesim audit " + strings.Join(quoteArgs(args), " ")
	failed := 0
	code := checkEach(r, cfg, ps, prop.Options{Seed: seed, Trials: trials}, "audit", stderr, func(p prop.Property, res prop.Result) int {
		pv := auditPropertyView{Name: p.Name, Scenarios: res.Trials}
		switch {
		case res.Unavailable:
			pv.Result = "skipped"
			if !quiet {
				fmt.Fprintf(stdout, "  %-26s skipped: %v\n", p.Name, res.Err)
			}
		case res.Holds:
			pv.Result = "ok"
			if !quiet {
				fmt.Fprintf(stdout, "  %-26s ok (%d scenarios)\n", p.Name, res.Trials)
			}
		default:
			failed++
			pv.Result, pv.Failure, pv.Shrunk = "FAIL", res.Err.Error(), res.Shrunk.String()
			w, err := prop.Write(r, res, outDir, "audit-"+strings.ReplaceAll(p.Name, "/", "-"), foundBy)
			if err != nil {
				fmt.Fprintf(stderr, "statesim audit: --out %s: could not write the counterexample: %v\n", outDir, err)
				return exitBadInput
			}
			pv.Counterexample = w.YAML
			if !quiet {
				fmt.Fprintf(stdout, "  %-26s FAIL on scenario %d; %d shrinks\n      %s\n      shrunk: %s\n      wrote %s (requests in %s); replay: statesim run %s\n",
					p.Name, res.Trials, res.Shrinks, res.Err, res.Shrunk, w.YAML, filepath.Base(w.JSONL), w.YAML)
			}
		}
		s.Properties = append(s.Properties, pv)
		return exitClean
	})
	if code != exitClean {
		return nil, 0, code
	}
	return s, failed, exitClean
}
