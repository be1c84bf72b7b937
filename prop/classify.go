package prop

import (
	"fmt"
	"slices"
	"strings"

	"statesim/model"
	"statesim/scenarios"
	"statesim/sched"
	"statesim/step"
)

// The observer's own reading of vLLM's batch classification. It sees only
// a step record's rows, in the batch order the record gives, and each
// row's scheduled, computed and prompt tokens; it never reads the Path or
// Region the scheduler chose, so a mistake in sched's classifier shows up
// as a disagreement instead of being copied.

// classRule is one vLLM version's batch reorder and its splits, as
// functions of a row's query length q, num_computed_tokens c,
// num_prompt_tokens p and the decode threshold t (1, or 1 + K under
// speculative decoding: the runner's for the region, the builder's for
// the split).
type classRule struct {
	// region is the reorder's region rank: rows must come in
	// non-decreasing rank. nil: the version does not reorder.
	region func(q, c, p, t int) int
	// decode reports whether a row may continue the decode segment of
	// the Mamba builders (mamba_attn.py: Mamba1, Mamba2, ShortConv,
	// MiniMax): the split takes the leading rows while it holds.
	decode func(q, c, p, t int) bool
	// gdnDecode is the same for the Gated DeltaNet builder
	// (gdn_attn.py), which Qwen3-Next and Kimi Linear's KDA layers use.
	gdnDecode func(q, c, p, t int) bool
	// gdnStateless: the GDN builder's non-spec 1-token rows decode only
	// with state (#51565), in the spec branch as in the split.
	gdnStateless bool
}

// gdnFamily reports whether a model's state layers are split by the
// GDN builder: GatedDeltaNet, and KDA as Kimi Linear runs it
// (KimiGatedDeltaNetAttention keeps the GDN backend; vLLM issue #51562).
// Kimi-K3's KDA builder (KimiK3KDAMetadataBuilder) takes the same rules:
// its fix #51483 and the GDN one #51565 are both first in v0.31, so only
// engine.patches tell them apart (withSplitPatches).
func gdnFamily(k model.StateKind) bool { return k == model.GatedDeltaNet || k == model.KDA }

// classRules maps each vllm_version to its rules. A version sched knows
// and this table does not fails every run's no-decode-before-prefill
// property (and TestEveryVersionHasAClassRule), rather than being judged
// by some other version's rules.
var classRules = map[string]classRule{
	// vLLM ≤ 0.13: the reorder puts q ≤ threshold first whatever c is,
	// and the split takes the leading rows by query length
	// (split_decodes_and_prefills), so a new 1-token row is a decode.
	"v0.13": {region: regionByQueryLen, decode: byQueryLen, gdnDecode: byQueryLen},
	// v0.14 (#32118): the reorder puts c == 0 last, but the split still
	// goes by query length alone.
	"v0.14": {region: regionComputedLast, decode: byQueryLen, gdnDecode: byQueryLen},
	// v0.19 (#37303): four regions; the Mamba split also stops at a row
	// still prefilling (c < p). The GDN builder keeps the default flags:
	// by query length alone.
	"v0.19": {region: regionFour, decode: doneDecoding, gdnDecode: byQueryLen},
	// v0.22 (#42430): a 1-token Mamba row with state decodes, prompt done
	// or not.
	"v0.22": {region: regionFour, decode: hasState, gdnDecode: byQueryLen},
	// v0.31 (#51565): the GDN builder sends a 1-token row decoding only
	// when the request has state (seq_len > query_len).
	"v0.31": {region: regionFour, decode: hasState, gdnDecode: hasState, gdnStateless: true},
	// V0's control: no reorder, and Mamba1 always took the prefill path.
	"v0": {decode: never, gdnDecode: never},
}

// Releases that changed nothing the observer judges, and the release
// whose rules they take; "fixed" is the newest.
func init() {
	for _, v := range []string{"v0.23", "v0.24", "v0.25", "v0.26", "v0.27", "v0.28", "v0.29", "v0.30"} {
		classRules[v] = classRules["v0.22"]
	}
	classRules["fixed"] = classRules["v0.31"]
}

// regionByQueryLen: decode (q ≤ t), extend (c > 0), prefill.
func regionByQueryLen(q, c, _, t int) int {
	switch {
	case q <= t:
		return 0
	case c > 0:
		return 1
	}
	return 2
}

// regionComputedLast: prefill (c == 0) last, then decode (q ≤ t) before
// extend.
func regionComputedLast(q, c, _, t int) int {
	switch {
	case c == 0:
		return 2
	case q <= t:
		return 0
	}
	return 1
}

// regionFour is reorder_batch_to_split_decodes_and_prefills after #37303:
// decode, short extend, long extend, prefill.
func regionFour(q, c, p, t int) int {
	switch {
	case c == 0:
		return 3
	case q > t:
		return 2
	case c < p:
		return 1
	}
	return 0
}

func byQueryLen(q, _, _, t int) bool { return q <= t }

// doneDecoding is the split with is_prefilling (c < p) consulted: only a
// short row whose prompt is computed is a decode. c ≥ p ≥ 1 implies the
// row has state.
func doneDecoding(q, c, p, t int) bool { return q <= t && c > 0 && c >= p }

// hasState: a short row decodes when its prompt is computed, or when it
// is one token long and has state (#42430 turns only such prefilling rows
// into decodes; with t = 1 that is every short row with state).
func hasState(q, c, p, t int) bool { return q <= t && c > 0 && (c >= p || q == 1) }

func never(int, int, int, int) bool { return false }

// classifier re-derives each row's path for one scenario's version and
// model.
type classifier struct {
	version      string
	rule         classRule
	decode       func(q, c, p, t int) bool // the rule of the model's builder
	gdn          bool
	known        bool
	forcePrefill bool
	// Speculative decoding (withSpec): K, and the runner's reorder
	// threshold (the minimum over groups: an MTP or EAGLE drafter's 1,
	// unless #55898 lets the state builders' 1 + K win).
	k, runnerT int
	// The observer's own CUDA-graph dispatch rule (withGraphs): FULL
	// decode graphs captured, the largest captured batch, and whether
	// #53059's guard is patched in.
	fullGraphs bool
	maxBS      int
	guard      bool
	// guardV2: V2's own gate (#51865), judged by V2's prefill_len.
	guardV2 bool
	// Model Runner V2 (withGraphs): no reorder but a per-step sort
	// (uniform decodes first with #47381), and is_prefilling against
	// prefill_len, which for a resumed request is its prompt and outputs
	// when it was re-added; prefillLen keeps that per request, from the
	// first row after each preemption.
	v2, uniformFirst bool
	prefillLen       map[int64][2]int // request id: (num_preemptions, prefill_len)
	// builderClass is the state layers' metadata builder
	// (vllm_builders.go); draftsFirst is #47808's V2 sort key,
	// gdnReclassify #34871's rule in the GDN spec branch.
	builderClass               string
	draftsFirst, gdnReclassify bool
	// tailFix: #55178 in the scenario's code (withSpec).
	tailFix bool
}

// withSpec sets the observer's reading of speculative decoding from a
// scenario's engine.speculative and engine.patches: the state builders'
// threshold is 1 + K (_init_reorder_batch_threshold(1, use_spec_decode)),
// the runner's the minimum over every group's (#55894), where an MTP or
// EAGLE drafter's attention group reports 1; #55898 makes it 1 + K.
func (k *classifier) withSpec(method string, numSpec int, patches []string) {
	k.k, k.runnerT = numSpec, 1+numSpec
	if (method == "mtp" || method == "eagle") && !slices.Contains(patches, "+55898") {
		k.runnerT = 1
	}
	k.gdnReclassify = has(k.version, patches, 34871)
	k.tailFix = has(k.version, patches, 55178)
}

// withSplitPatches applies a scenario's engine.patches to the GDN-family
// split: the model's builder fix (#51483 for Kimi-K3's KDA builder,
// fullRankGate; #51565 for the shared GDN builder) added gives v0.31's
// rule, removed v0.22's. The other builder's fix changes nothing here.
func (k *classifier) withSplitPatches(patches []string, fullRankGate bool) {
	if !k.gdn {
		return
	}
	fix := "51565"
	if fullRankGate {
		fix = "51483"
	}
	switch {
	case slices.Contains(patches, "+"+fix):
		k.decode, k.rule.gdnStateless = classRules["v0.31"].gdnDecode, true
	case slices.Contains(patches, "-"+fix):
		k.decode, k.rule.gdnStateless = classRules["v0.22"].gdnDecode, false
	}
}

// withGraphs sets the observer's dispatch rule from a scenario's
// engine.cudagraph_mode, engine.patches, max_num_seqs and
// engine.model_runner. Its reading of
// vLLM (gpu_model_runner.py _is_uniform_decode, K = 0): a step replays the
// FULL decode graph when every row has exactly one token, the batch fits a
// captured size (min(max_num_seqs, 512)), and, with #53059 under
// the V1 runner, no row's prompt is still being computed (with #51865
// under V2: no row prefilling by V2's prefill_len).
func (k *classifier) withGraphs(mode string, patches []string, maxNumSeqs int, runner string) {
	k.fullGraphs = mode == "full_decode_only" || mode == "full_and_piecewise"
	k.maxBS = min(maxNumSeqs, 512)
	if runner == "" {
		runner = defaultRunner(k.version)
	}
	// #53059 edits V1's GPUModelRunner._is_uniform_decode; Model Runner
	// V2's CudaGraphManager tests the shape alone (cudagraph_utils.py @
	// 00383f8c), so under V2 the patch leaves the dispatch shape-only.
	k.guard = slices.Contains(patches, "+53059") && runner == "v1"
	k.v2 = runner == "v2" && k.rule.region != nil
	k.guardV2 = k.v2 && has(k.version, patches, 51865)
	// #47381 (merged 2026-07-02) is in the observer's v0.22 rules and on,
	// as in sched's table, which has no row between v0.22 and v0.31.
	switch k.version {
	case "v0.13", "v0.14", "v0.19":
		k.uniformFirst = slices.Contains(patches, "+47381")
	default:
		k.uniformFirst = !slices.Contains(patches, "-47381")
	}
	k.draftsFirst = has(k.version, patches, 47808)
	k.prefillLen = map[int64][2]int{}
}

// prefilledAt is the length up to which the runner counts row's request
// as prefilling: its prompt under V1; under V2 what it was last added
// with, the prompt and the outputs it had when it came back after its
// latest preemption.
func (k *classifier) prefilledAt(row *step.Row) int {
	if !k.v2 {
		return row.NumPrompt
	}
	e, ok := k.prefillLen[row.RequestID]
	if !ok || e[0] != row.NumPreemptions {
		e = [2]int{row.NumPreemptions, row.NumPrompt + row.NumOutput}
		if row.NumPreemptions == 0 {
			e[1] = row.NumPrompt
		}
		k.prefillLen[row.RequestID] = e
	}
	return e[1]
}

// defaultRunner is the observer's own reading of the default model
// runner: Model Runner V2 for every model from v0.29.0 (#53183), V1
// before (and for the v0 control, which has none).
func defaultRunner(version string) string {
	switch version {
	case "v0.29", "v0.30", "v0.31", "fixed":
		return "v2"
	}
	return "v1"
}

// fullReplay is the observer's dispatch decision for rec.
func (k *classifier) fullReplay(rec *step.Record) bool {
	if !k.fullGraphs || len(rec.Rows) == 0 || len(rec.Rows) > k.maxBS {
		return false
	}
	// #53059 (V1) and #51865 (V2) ask the same of each row; prefilledAt
	// is the prompt under V1, prefill_len under V2.
	for i := range rec.Rows {
		r := &rec.Rows[i]
		if r.NumScheduled != 1+k.k || (k.guard || k.guardV2) && r.NumComputed < k.prefilledAt(r) {
			return false
		}
	}
	return true
}

func newClassifier(version string, kind model.StateKind, forcePrefill bool) classifier {
	r, ok := classRules[version]
	k := classifier{version: version, rule: r, decode: r.decode, known: ok, forcePrefill: forcePrefill, runnerT: 1, builderClass: builderClass[kind]}
	if gdnFamily(kind) {
		k.decode, k.gdn = r.gdnDecode, true
	}
	if k.builderClass == "LinearAttentionMetadataBuilder" && version != "v0" {
		// linear_attn.py: split_decodes_and_prefills(m,
		// decode_threshold=self.reorder_batch_threshold) with the default
		// flags, the same call in every release read.
		k.decode = byQueryLen
	}
	return k
}

// classifierFor is the observer set up from scenario sc: its version,
// model, speculative decoding, CUDA graphs, runner and patches.
func classifierFor(sc *scenarios.Scenario) classifier {
	k := newClassifier(sc.Engine.VLLMVersion, sc.Model.Shape.StateKind(), sc.Engine.ForcePrefillPath)
	k.withGraphs(sc.Engine.CUDAGraphMode, sc.Engine.Patches, sc.Engine.MaxNumSeqs, sc.Engine.ModelRunner)
	k.withSpec(sc.Engine.Speculative.Method, sc.Engine.Speculative.NumSpeculativeTokens, sc.Engine.Patches)
	k.withSplitPatches(sc.Engine.Patches, sc.Model.Shape.Mixer.FullRankGate)
	return k
}

// check returns the first disagreement between rec and the version's
// rules ("" when none): a row out of the reorder's region order, or a row
// whose kernel path or has_initial_state differs from what the rules
// give. decodeNoState is called for every row the rules or the record put
// on the decode path with no computed tokens.
func (k *classifier) check(rec *step.Record, decodeNoState func(rec *step.Record, row *step.Row, derived sched.Path)) string {
	if !k.known {
		known := make([]string, 0, len(classRules))
		for _, v := range sched.VersionNames() {
			if _, ok := classRules[v]; ok {
				known = append(known, v)
			}
		}
		return fmt.Sprintf("vllm_version %q has no classification rule in prop's classRules (rules for: %s): add its row",
			k.version, strings.Join(known, ", "))
	}
	first := ""
	note := func(format string, a ...any) {
		if first == "" {
			first = fmt.Sprintf("step %d: ", rec.Step) + fmt.Sprintf(format, a...)
		}
	}
	if full := k.fullReplay(rec); len(rec.Rows) > 0 && full != (rec.Rows[0].Graph == sched.GraphFull) {
		note("the runner dispatched the batch to the %s graph; the observer's uniform-decode rule gives full = %v", rec.Rows[0].Graph, full)
	}
	decoding := !k.forcePrefill
	anyDrafts := false
	for i := range rec.Rows {
		anyDrafts = anyDrafts || rec.Rows[i].NumDrafts > 0
	}
	// The GDN builder's spec branch: with a spec row in the batch, rows
	// are picked by mask, not by position (gdn_attn.py
	// spec_sequence_masks).
	specMask := false
	if k.gdn && k.k > 0 && decoding {
		for i := range rec.Rows {
			specMask = specMask || gdnSpecRow(rec.Rows[i].NumScheduled, rec.Rows[i].NumDrafts)
		}
	}
	thr := k.splitThreshold(anyDrafts)
	var prevKey [3]int
	prev := -1
	for i := range rec.Rows {
		row := &rec.Rows[i]
		q, c, p := row.NumScheduled, row.NumComputed, k.prefilledAt(row)
		if k.v2 {
			key := k.v2SortKey(q, row.NumDrafts)
			if i > 0 && keyLess(key, prevKey) {
				note("request %d (row %d: %d scheduled, %d drafts) comes after a row it sorts before in Model Runner V2's order (drafts first: %v, uniform decodes first: %v)",
					row.RequestID, i, q, row.NumDrafts, k.draftsFirst, k.uniformFirst)
			} else {
				prevKey = key
			}
		} else if k.rule.region != nil {
			reg := k.rule.region(q, c, p, k.runnerT)
			if reg < prev {
				note("request %d (row %d: %d scheduled, %d computed, %d prompt) comes after a row of a later %s region",
					row.RequestID, i, q, c, p, k.version)
			}
			prev = max(prev, reg)
		}
		// #55178 reaches only a builder handed the counts: thr > 1.
		decoding = decoding && (k.decode(q, c, p, thr) ||
			k.tailFix && !k.gdn && thr > 1 && q <= thr && paddedTail(q, c, row.NumDrafts))
		dec := decoding
		if specMask {
			dec = gdnSpecRow(q, row.NumDrafts) || !k.gdnReclassify && q == 1 && (!k.rule.gdnStateless || c > 0)
		}
		want, init := sched.PathPrefill, c > 0
		if dec {
			want, init = sched.PathDecode, true
		}
		if row.Path != want || row.HasInitialState != init {
			note("request %d (row %d: %d scheduled, %d computed, %d prompt) is on the %s path (has_initial_state %v); %s's rules give %s (%v)",
				row.RequestID, i, q, c, p, row.Path, row.HasInitialState, k.version, want, init)
		}
		if c == 0 && (want == sched.PathDecode || row.Path == sched.PathDecode) {
			decodeNoState(rec, row, want)
		}
	}
	return first
}
