package prop_test

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"statesim/engine"
	"statesim/internal/runtest"
	"statesim/prop"
	"statesim/scenarios"
)

var rewrite = flag.Bool("statesim.rewrite-regressions", false,
	"rerun the searches of TestRewriteRegressions and overwrite scenarios/regressions")

const regressionsDir = "../scenarios/regressions"

// TestRegressions replays every scenario in scenarios/regressions, loaded
// the way `statesim run` loads it, and requires exactly the invariants its
// "# expect:" line names to be violated ("clean": none).
func TestRegressions(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(regressionsDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no scenarios in %s", regressionsDir)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".yaml"), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			want, err := prop.ParseExpect(data)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			rep := runtest.Run(t, f, engine.Options{})
			if got := violatedNames(rep); strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("%s: violated %v, expected %v (replay: statesim run %s)", f, got, want, f)
			}
		})
	}
}

// regression is one search whose shrunk counterexample is kept.
type regression struct {
	name  string
	cfg   func() prop.Config
	prop  string
	noPre bool  // search with prop.WithoutPreemption
	seed  int64 // search seed
	// control, when set, changes the counterexample into its fixed twin
	// (kept too, expected clean) and names it.
	control func(p *prop.Params) string
	// more are further fixed twins, kept beside the first.
	more []func(p *prop.Params) string
}

func underFixed(p *prop.Params) string     { p.Version = "v0.22"; return "fixed" }
func with64BitIndex(p *prop.Params) string { p.StateIndexBits = 64; return "64bit" }

// underV031 is the GDN builders' fix (#51565, first in v0.31).
func underV031(p *prop.Params) string { p.Version = "v0.31"; return "fixed" }

// with51483 is Kimi-K3's KDA builder fix alone on the same release: it,
// not #51565 (the shared GDN builder's), closes Kimi-K3's stale read.
func with51483(p *prop.Params) string { p.Patches = []string{"+51483"}; return "51483" }

// gdnBudgetCut is the GDN search over prompts of two tokens or more: the
// imposter is a new request cut to one token by the budget.
// with53059 is the same requests under open PR #53059's runner guard, on
// the V1 runner: the PR edits GPUModelRunner._is_uniform_decode only, and
// v0.31 defaults to Model Runner V2, where it changes nothing.
func with53059(p *prop.Params) string {
	p.Patches, p.ModelRunner = []string{"+53059"}, "v1"
	return "53059"
}

// cudagraphStale is the GDN search at v0.31 (the builder fixed by #51565)
// on the V1 runner with vLLM's default FULL_AND_PIECEWISE graphs: V1's
// shape-only dispatch replays the decode graph over a stale state-index
// buffer. Model Runner V2 has #51865's has_prefill gate from v0.28.
func cudagraphStale() prop.Config {
	c := prop.GDN("v0.31", "qwen3-next-80b-a3b")
	c.CUDAGraphMode, c.ModelRunner = "full_and_piecewise", "v1"
	return c
}

// cudagraphStaleMTP is the same dispatch under MTP: the uniform decode
// length is 1 + K, so a prompt chunk of exactly 1 + K tokens replays the
// spec-decode graph (#53051). #55898 is applied so that the search does
// not stop at #55894's threshold first.
func cudagraphStaleMTP() prop.Config {
	c := prop.Spec(prop.GDN("v0.31", "qwen3-next-80b-a3b"), 1, 4, "mtp")
	c.CUDAGraphMode, c.ModelRunner = "full_and_piecewise", "v1"
	c.Patches = []string{"+55898"}
	return c
}

// also53059 adds open PR #53059's dispatch guard to the patches, on the
// V1 runner (see with53059).
func also53059(p *prop.Params) string {
	p.Patches, p.ModelRunner = append(slices.Clone(p.Patches), "+53059"), "v1"
	return "53059"
}

// cudagraphStaleV2 is cudagraphStale with #53059 patched in under Model
// Runner V2 without #51865 (as V2 was before v0.28): V2's
// CudaGraphManager.get_cudagraph_runtime_mode dispatched by shape alone,
// so #53059, an edit of V1's _is_uniform_decode, does not close the class
// there; #51865 (v0.28) does (the twin also51865).
func cudagraphStaleV2() prop.Config {
	c := cudagraphStale()
	c.Patches, c.ModelRunner = []string{"+53059", "-51865"}, "v2"
	return c
}

// cudagraphStaleMTPV2 is the (1 + K)-token form (#53051) the same way.
func cudagraphStaleMTPV2() prop.Config {
	c := cudagraphStaleMTP()
	c.Patches, c.ModelRunner = append(slices.Clone(c.Patches), "+53059", "-51865"), "v2"
	return c
}

// onV1 is the same requests and patches on the V1 runner, where #53059's
// guard is on the dispatch path.
func onV1(p *prop.Params) string { p.ModelRunner = "v1"; return "on-v1" }

// also51865 adds V2's own dispatch gate (has_prefill, read in vLLM at
// 0036d38d; #51865), which closes the class under V2.
func also51865(p *prop.Params) string {
	p.Patches = slices.DeleteFunc(slices.Clone(p.Patches), func(s string) bool { return s == "-51865" })
	return "51865"
}

func gdnBudgetCut() prop.Config {
	c := prop.GDN("v0.22", "qwen3-next-80b-a3b")
	c.MinPrompt = 2
	return c
}

// specModel is the MTP search's model: Nemotron-H (Mamba2, the Mamba
// builder), as in vLLM issues #35447 and #55894.
const specModel = "nemotron-nano-9b-v2"

// mtpShortPrompt searches v0.14 (the default-flag Mamba split) under
// speculative decoding with prompts of two tokens or more and budgets of
// 64 or more, so that what is found is #35447's new prompt of 2..1 + K
// tokens on the decode path, not a prompt cut to 1 token (bug A's form,
// with or without speculation).
func mtpShortPrompt() prop.Config {
	c := prop.Spec(prop.GDN("v0.14", specModel), 1, 4, "mtp", "eagle", "ngram")
	c.MinPrompt, c.MinBudget = 2, 64
	return c
}

// mtpMinThreshold searches v0.31 under speculative decoding on the V1
// runner, whose reorder takes the minimum threshold over groups: #55894.
// Prompts of two tokens or more: a new one-token prompt beside a draft
// decode is padded to 1 + K (#45237) and its state stored after the
// placeholders, which #55898 does not touch (spec-padded-new-prompt).
func mtpMinThreshold() prop.Config {
	c := prop.Spec(prop.GDN("v0.31", specModel), 1, 4, "mtp", "eagle", "ngram")
	c.ModelRunner, c.MinPrompt = "v1", 2
	return c
}

// mtpUniformChunkV2 is the same search under Model Runner V2 with
// #55898, at v0.27 (the last release with #47381's sort and without
// #47808's): V2 runs no threshold reorder, and #47381's sort puts every
// row of 1 + K tokens first, so a prompt chunk of exactly 1 + K tokens
// can lead a draft decode, and the Mamba split, stopping at the
// prefilling chunk, sends the draft row to the prefill kernel. From v0.28
// rows with drafts sort first (#47808) and the search is clean.
func mtpUniformChunkV2() prop.Config {
	c := prop.Spec(prop.GDN("v0.27", specModel), 1, 4, "mtp", "eagle", "ngram")
	c.Patches, c.ModelRunner = []string{"+55898"}, "v2"
	return c
}

// mamba1SpecDraft searches the newest release with ngram on the Mamba1
// preset: the runner hands the Mamba1 builder no num_accepted_tokens, so
// a draft row splits at threshold 1 and takes the prefill kernel, which
// stores the state after its drafts in column 0; a rejected draft leaves
// that state past the accepted tokens (docs/bugs.md, issue 32). ngram
// needs no draft model, so it is the method a Jamba deployment can use.
func mamba1SpecDraft() prop.Config {
	return prop.Spec(prop.GDN("v0.31", "tiny-hybrid"), 1, 4, "ngram")
}

// onMamba2 is the same requests with Mamba2 state layers, whose builder
// gets num_accepted_tokens: the draft rows decode and each reads the
// accepted column.
func onMamba2(p *prop.Params) string { p.Preset = "tiny-hybrid-mamba2"; return "mamba2" }

// bugBAllMode is bug B's search at v0.13 with prefix caching on, which
// that release resolves to mamba_cache_mode all: the state page is padded
// to the Mamba kernel's 2048-token chunk of attention page, so the stride
// grows and the 16-bit index wraps from slot 1, not 64.
func bugBAllMode() prop.Config {
	c := prop.BugB()
	c.Versions = []string{"v0.13"}
	return prop.Prefix(c, 64, 3, "all")
}

// cachingOff is the same requests with prefix caching off: the unpadded
// page, whose stride wraps only from slot 64.
func cachingOff(p *prop.Params) string { p.CacheMode = ""; return "caching-off" }

// onV2 is the same requests and patches on Model Runner V2.
func onV2(p *prop.Params) string { p.ModelRunner = "v2"; return "v2" }

// underV019 is #37303's four-region reorder and is_prefilling split.
func underV019(p *prop.Params) string { p.Version = "v0.19"; return "fixed" }

// with55898 is open PR #55898's runner threshold.
func with55898(p *prop.Params) string { p.Patches = []string{"+55898"}; return "55898" }

var regressions = []regression{
	{name: "bug-a-budget-1", cfg: func() prop.Config { return prop.BugA("v0.13") }, prop: "stale-slot-read", seed: 1, control: underFixed},
	{name: "bug-a-incident-shape", cfg: func() prop.Config { return incidentShape("v0.13") }, prop: "stale-slot-read", noPre: true, seed: 1, control: underFixed},
	{name: "bug-a-preempted-self", cfg: func() prop.Config { return incidentShape("v0.13") }, prop: "stale-slot-read", seed: 22, control: underFixed},
	{name: "v014-residual-split", cfg: func() prop.Config { return incidentShape("v0.14") }, prop: "no-decode-before-prefill", seed: 1, control: underFixed},
	{name: "v014-stale-read", cfg: func() prop.Config { return incidentShape("v0.14") }, prop: "stale-slot-read", seed: 1},
	{name: "bug-a-logprobs", cfg: numericBugA, prop: "logprobs-match-reference", seed: 1, control: underFixed},
	{name: "bug-b-wrap16", cfg: prop.BugB, prop: "wrong-address-write", seed: 1, control: with64BitIndex},
	{name: "bug-b-wrap16-prefix-caching-all", cfg: bugBAllMode, prop: "wrong-address-write", seed: 1, control: cachingOff},
	{name: "gdn-imposter-qwen3-next", cfg: func() prop.Config { return prop.GDN("v0.22", "qwen3-next-80b-a3b") }, prop: "stale-slot-read", seed: 1, control: underV031},
	{name: "gdn-imposter-kimi-linear", cfg: func() prop.Config { return prop.GDN("v0.30", "kimi-linear-48b-a3b") }, prop: "stale-slot-read", seed: 1, control: underV031},
	{name: "kda-stateless-kimi-k3", cfg: func() prop.Config { return prop.GDN("v0.30", "kimi-k3") }, prop: "stale-slot-read", seed: 1, control: underV031,
		more: []func(p *prop.Params) string{with51483}},
	{name: "gdn-imposter-budget-cut", cfg: gdnBudgetCut, prop: "stale-slot-read", seed: 1, control: underV031},
	{name: "cudagraph-stale-qwen3-next", cfg: cudagraphStale, prop: "stale-slot-read", seed: 1, control: with53059},
	{name: "cudagraph-stale-qwen3-next-mtp", cfg: cudagraphStaleMTP, prop: "stale-slot-read", seed: 1, control: also53059},
	{name: "cudagraph-stale-qwen3-next-53059-v2", cfg: cudagraphStaleV2, prop: "stale-slot-read", seed: 1, control: onV1,
		more: []func(p *prop.Params) string{also51865}},
	{name: "cudagraph-stale-qwen3-next-mtp-53059-v2", cfg: cudagraphStaleMTPV2, prop: "stale-slot-read", seed: 1, control: onV1,
		more: []func(p *prop.Params) string{also51865}},
	{name: "mtp-short-prompt-nemotron", cfg: mtpShortPrompt, prop: "no-decode-before-prefill", seed: 1, control: underV019},
	{name: "mtp-min-threshold-nemotron", cfg: mtpMinThreshold, prop: "stale-slot-read", seed: 1, control: with55898},
	{name: "linear-attn-imposter-minimax", cfg: func() prop.Config { return prop.GDN("v0.31", "minimax-text-01") }, prop: "stale-slot-read", seed: 1},
	{name: "mamba1-spec-draft-prefill", cfg: mamba1SpecDraft, prop: "stale-slot-read", seed: 1, control: onMamba2},
	{name: "mtp-uniform-chunk-nemotron-v2", cfg: mtpUniformChunkV2, prop: "stale-slot-read", seed: 1, control: onV1},
	{name: "eagle-drop-mamba-hit", cfg: eagleDrop, prop: "stale-slot-read", noPre: true, seed: 1, control: also48375,
		more: []func(p *prop.Params) string{also57128}},
	{name: "align-async-early-free", cfg: alignAsyncFrees, prop: "stale-slot-read", noPre: true, seed: 1, control: with33997},
	{name: "attn-only-hit-47491", cfg: attnOnlyHit, prop: "stale-slot-read", seed: 1, control: asReleased},
	{name: "connector-max-hit-44243", cfg: connectorMaxHit, prop: "stale-slot-read", seed: 1, control: with48425},
	{name: "async-accepted-permuted", cfg: asyncAcceptedPermuted, prop: "stale-slot-read", noPre: true, seed: 1, control: with53919,
		// onV2: Model Runner V2 keeps num_accepted_tokens per request
		// state, not per row (gpu/model_states/mamba_hybrid.py).
		more: []func(*prop.Params) string{onV2}},
	{name: "async-accepted-race", cfg: asyncAcceptedRace, prop: "stale-slot-read", noPre: true, seed: 1, control: with53919,
		more: []func(*prop.Params) string{hostAhead, onV2}},
	{name: "v2-seed-units-53142", cfg: v2SeedUnits, prop: "stale-slot-read", seed: 1, control: with53798},
	{name: "v2-seed-units-53142-fine", cfg: v2SeedUnitsFine, prop: "stale-slot-read", seed: 1, control: with53798},
	{name: "align-chunk-units", cfg: alignChunkUnits, prop: "stale-slot-read", seed: 1, control: with54076},
	{name: "spec-padded-tail-55178", cfg: paddedTail, prop: "stale-slot-read", noPre: true, seed: 1, control: with55178},
	{name: "spec-padded-new-prompt", cfg: func() prop.Config { return paddedNewPrompt("tiny-hybrid-mamba2") }, prop: "stale-slot-read", seed: 1, control: unpadded},
	{name: "spec-padded-new-prompt-gdn", cfg: func() prop.Config { return paddedNewPrompt("qwen3-next-80b-a3b") }, prop: "no-decode-before-prefill", seed: 1, control: unpadded},
}

// paddedNewPrompt searches the newest release under ngram with prompts
// from one token: #45237 pads a new one-token prompt beside a draft
// decode to 1 + K with placeholder drafts too (num_new_tokens == 1 is
// all it asks). With no state, #55178 leaves the row a prefill on the
// Mamba2 builder, whose kernel stores the state after the placeholders;
// the GDN builder's spec mask (draft count >= 0) sends it to the spec
// decode kernel with no state. A model prediction from the code, not
// reported upstream (docs/bugs.md).
func paddedNewPrompt(model string) prop.Config {
	return prop.Spec(prop.GDN("v0.31", model), 1, 4, "ngram")
}

// unpadded is the same requests without #45237: the prompt runs as its
// one token.
func unpadded(p *prop.Params) string {
	p.Patches = append(slices.Clone(p.Patches), "-45237")
	return "45237-off"
}

// paddedTail searches v0.28 (#45237's padding, without #55178) on the
// Mamba2 tiny hybrid under ngram with align-mode prefix caching (the
// mode vLLM runs with spec decoding on hybrids) over shared prefixes: a request whose hit leaves one prompt token, arriving while
// another decodes, is scheduled 1 + K tokens with placeholder drafts;
// still prefilling, it takes the prefill kernel, which stores the state
// after the placeholders in column 0, and the sampler rejects them all.
// Prompts of 60..70 tokens, around the 64-token shared id, so that a
// tail of one is common; a new one-token prompt, padded too and left so
// by #55178 (stateful rows only; docs/bugs.md), is out of reach. ngram has
// no drafter group, so #55894 and #53912 cannot answer first; no
// preemption, so the resumed short decode cannot either.
func paddedTail() prop.Config {
	c := prop.Prefix(prop.Spec(prop.GDN("v0.28", "tiny-hybrid-mamba2"), 1, 4, "ngram"), 64, 2, "align")
	c.MinPrompt, c.MaxPrompt, c.SpecAlign = 60, 70, true
	return c
}

// with55178 is the same requests with #55178: the padded tail decodes.
func with55178(p *prop.Params) string {
	p.Patches = append(slices.Clone(p.Patches), "+55178")
	return "fixed"
}

// attnOnlyHit searches align-mode prefix caching on the tiny Mamba2
// hybrid over shared prefixes with closed PR #47491, which no release
// has: a Mamba miss no longer cuts the hybrid hit, so a request starts at
// the attention hit with no Mamba state behind it, and the builders'
// has_initial_states_p (num_computed_tokens > 0, per row) makes the
// prefill kernel read the fresh block it was given (#43090's thread).
// v0.22 stands for v0.23..v0.27, the main #47491 was written against.
func attnOnlyHit() prop.Config {
	c := prop.BugA("v0.22")
	c.Presets = []string{"tiny-hybrid-mamba2"}
	c = prop.Prefix(c, 64, 3, "align")
	c.Patches = []string{"+47491"}
	return c
}

// connectorMaxHit searches align-mode prefix caching on the tiny Mamba2
// hybrid over shared prefixes with NixlConnector attached, at v0.22
// without #48425: the releases between #44243 and #48425 (inside the
// v0.22 row's v0.22..v0.27) take a new request's local hit as the
// maximum over groups, and with no external tokens behind it the request
// resumes at the attention hit on a Mamba state nothing wrote (vLLM
// issue #46453's FA-deeper direction; sched/connector.go).
func connectorMaxHit() prop.Config {
	c := prop.BugA("v0.22")
	c.Presets = []string{"tiny-hybrid-mamba2"}
	c = prop.Prefix(c, 64, 3, "align")
	c.Patches, c.KVConnector = []string{"-48425"}, "NixlConnector"
	return c
}

// v2SeedUnits searches Model Runner V2's align-mode seed (#53142,
// #55600): Qwen3.5-4B with a DFlash drafter whose sliding-window group
// ends at 256 tokens beside the Mamba group's 528 (11 KV heads × 192: the
// page divides the unified one and no fine-grained hits), so
// cache_config.block_size after start-up is 256 and add_request divides a
// resumed position by it. Prompts share 9216-token prefixes (the 8448
// hit plus a block past it for the EAGLE drop every group takes), one request runs at a time
// so the second looks its prefix up after the first cached it, and the
// 8448-token budget lets a chunk end on the scheduler block.
func v2SeedUnits() prop.Config {
	c := prop.Prefix(prop.Spec(prop.GDN("v0.31", "qwen3.5-4b"), 1, 1, "dflash"), 9216, 1, "align")
	c.Draft = scenarios.DraftConfig{NumHiddenLayers: 1, NumKeyValueHeads: 11, HeadDim: 192, SlidingWindow: 2048}
	c.MinPrompt, c.MaxPrompt = 9300, 10000
	c.MinBudget, c.MaxBudget, c.MaxSeqs, c.MaxLongPrefill = 8448, 8448, 1, 0
	c.SpecAlign = true
	return c
}

// v2SeedUnitsFine is v2SeedUnits on a layout with fine-grained hits on
// (#46384): Qwen3-Next with an 8 × 128 drafter, whose group sits at the
// 272-token hash block beside 544-token Mamba blocks.
func v2SeedUnitsFine() prop.Config {
	c := v2SeedUnits()
	c.Presets, c.HashBlock = []string{"qwen3-next-80b-a3b"}, 9248
	c.Draft = scenarios.DraftConfig{NumHiddenLayers: 1, NumKeyValueHeads: 8, HeadDim: 128, SlidingWindow: 2048}
	c.MinBudget, c.MaxBudget = 8704, 8704
	return c
}

// alignChunkUnits is v2SeedUnits with the seed fixed (+53798) and a
// 2048-token budget: the scheduler cuts align-mode chunks at multiples of
// cache_config.block_size (256, Scheduler._mamba_block_aligned_split @
// 6adad0876), which the Mamba group's 528-token blocks do not share, so a
// block is cached under a boundary its state never reached (#53142's
// thread names this second consumer; open PR #54076 cuts at the Mamba
// block).
func alignChunkUnits() prop.Config {
	c := v2SeedUnits()
	c.Patches = []string{"+53798"}
	c.MinBudget, c.MaxBudget = 2048, 2048
	return c
}

// with54076 cuts the chunks at the Mamba block as well.
func with54076(p *prop.Params) string {
	p.Patches = append(slices.Clone(p.Patches), "+54076")
	return "54076"
}

// with53798 divides the seed by the Mamba block (#53798; #55507 and
// #55601 are the same change, all open).
func with53798(p *prop.Params) string { p.Patches = append(p.Patches, "+53798"); return "53798" }

// with48425 is the same requests at v0.22 as released: #48425 falls
// back to the common hit when no external tokens back the deeper one.
func with48425(p *prop.Params) string { p.Patches = nil; return "with-48425" }

// asReleased is the same requests without #47491: every release takes the
// hybrid hit as the minimum over groups.
func asReleased(p *prop.Params) string { p.Patches = nil; return "as-released" }

// asyncAcceptedPermuted searches v0.19 on the V1 runner under MTP/EAGLE
// with align-mode prefix caching and async scheduling: a step's accepted
// counts reach the buffer by a blocking copy in its own sample_tokens,
// before the next step's add_request, condense and reorder swaps move
// them, and the prev_positions gather (#38556) moves them a second time
// (#53919; sched/accepted.go). +55898 and +48375 keep #55894 and #53912
// from answering first; no preemption.
func asyncAcceptedPermuted() prop.Config {
	c := prop.Prefix(prop.Spec(prop.GDN("v0.19", "tiny-hybrid-mamba2"), 1, 4, "mtp", "eagle"), 64, 3, "align")
	c.SpecAlign, c.Async, c.ModelRunner = true, []bool{true}, "v1"
	c.Patches = []string{"+55898", "+48375"}
	c.MinRequests, c.MinOutput = 3, 4
	return c
}

// asyncAcceptedRace is the search at v0.28, where the copy is
// non-blocking (#40172) and lands first only when the step ends before
// the host moves the next step's rows: it draws the host's time per step
// (timing.host_step_us) up to 5 ms, past the tiny hybrid's steps. Prompts
// from two tokens: v0.28 pads a new one-token prompt beside draft decodes
// (#45237), whose state its twins would otherwise report first.
func asyncAcceptedRace() prop.Config {
	c := asyncAcceptedPermuted()
	c.Versions, c.MaxHostStepUS, c.MinPrompt = []string{"v0.28"}, 5000, 2
	return c
}

// with53919 is the same requests under open PR #53919: the host waits on
// the copy before the first row move and reads the counts in place.
func with53919(p *prop.Params) string {
	p.Patches = append(slices.Clone(p.Patches), "+53919")
	return "53919"
}

// hostAhead is the same requests with a host that moves the rows before
// the step in flight ends (statesim's default, no host time): the copy
// lands in the old order and the gather is right.
func hostAhead(p *prop.Params) string { p.HostStepUS = 0; return "host-ahead" }

// alignAsyncFrees searches v0.19 under MTP/EAGLE with align-mode prefix
// caching and async scheduling, without #33352 and #33997: the Mamba
// manager frees on the scheduler's count, which includes the drafts of
// the step in flight, and so can free the block that step's boundary
// copy (in the runner, from its own count) writes next. +55898 and
// +48375 keep #55894 and #53912 from answering first, +53919 the
// accepted counts permuted under async (#53919's row); no preemption, so
// that the resumed 2..1 + K-token row does not either.
func alignAsyncFrees() prop.Config {
	c := prop.Prefix(prop.Spec(prop.GDN("v0.19", "tiny-hybrid-mamba2"), 1, 4, "mtp", "eagle"), 64, 3, "align")
	c.SpecAlign = true
	c.Async = []bool{true}
	c.Patches = []string{"-33997", "-33352", "+55898", "+48375", "+53919"}
	return c
}

// with33997 is the same requests with #33352 and #33997 as merged: the
// frees go by num_computed_tokens - K.
func with33997(p *prop.Params) string {
	p.Patches = []string{"+55898", "+48375", "+53919"}
	return "33997"
}

// eagleDrop searches v0.22 under MTP/EAGLE with align-mode prefix caching
// over shared prefixes (#53912): the attention hit drops its last block,
// the Mamba hit keeps the boundary its one-block margin reached. From the
// v0.28 row the coordinator gives the Mamba group no margin (#46384), and
// this form is gone. The tiny hybrid's 32-token blocks let short prompts
// reach a boundary; +55898 keeps #55894 from answering first, and the
// search runs without preemption so that the resumed 2..1 + K-token row
// (docs/bugs.md) does not either.
func eagleDrop() prop.Config {
	c := prop.Prefix(prop.Spec(prop.GDN("v0.22", "tiny-hybrid-mamba2"), 1, 4, "mtp", "eagle"), 64, 3, "align")
	c.SpecAlign = true
	c.Patches = []string{"+55898"}
	return c
}

// also48375 and also57128 add an open PR's Mamba lookup under the drop.
func also48375(p *prop.Params) string {
	p.Patches = append(slices.Clone(p.Patches), "+48375")
	return "48375"
}

func also57128(p *prop.Params) string {
	p.Patches = append(slices.Clone(p.Patches), "+57128")
	return "57128"
}

// TestRewriteRegressions reruns the searches above and requires them to
// regenerate scenarios/regressions byte for byte, so a change that moves a
// counterexample fails here, not silently. With
// go test ./prop -run TestRewriteRegressions -statesim.rewrite-regressions
// it overwrites the kept files instead.
func TestRewriteRegressions(t *testing.T) {
	t.Parallel() // an independent search or replay: the suite's longest, run beside the rest
	dir := regressionsDir
	if !*rewrite {
		dir = t.TempDir()
		defer sameFiles(t, dir, regressionsDir)
	}
	r := newRunner(t)
	for _, g := range regressions {
		p := property(t, g.prop)
		if g.noPre {
			p = prop.WithoutPreemption(p)
		}
		res := searchShared(t, g.cfg(), p, g.seed, 2000)
		if res.Holds {
			t.Fatalf("%s: no counterexample", g.name)
		}
		by := "go test ./prop -run TestRewriteRegressions -statesim.rewrite-regressions (search seed " + strconv.FormatInt(g.seed, 10) + ")"
		w, err := prop.Write(r, res, dir, g.name, by)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %s, expect %v", w.YAML, res.Shrunk, w.Expect)
		if g.control == nil {
			continue
		}
		shrunk := res.Shrunk
		for _, control := range append([]func(*prop.Params) string{g.control}, g.more...) {
			fixed := *shrunk
			label := control(&fixed)
			res.Shrunk = &fixed
			res.Err = nil
			res.Property = g.prop + " (control: the same requests, " + label + ")"
			w, err = prop.Write(r, res, dir, g.name+"-"+label, by)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(w.Expect, " ") != "clean" {
				t.Errorf("%s, %s, still violates %v", g.name, label, w.Expect)
			}
		}
	}
}

// sameFiles requires every file written to got to equal its namesake in
// want.
func sameFiles(t *testing.T, got, want string) {
	t.Helper()
	files, err := os.ReadDir(got)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("the searches wrote nothing")
	}
	for _, f := range files {
		g, err := os.ReadFile(filepath.Join(got, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		w, err := os.ReadFile(filepath.Join(want, f.Name()))
		if err != nil {
			t.Errorf("the searches wrote %s, which %s lacks (regenerate with -statesim.rewrite-regressions)", f.Name(), want)
			continue
		}
		if string(g) != string(w) {
			t.Errorf("%s: regenerated counterexample differs from the kept one (regenerate with -statesim.rewrite-regressions and say why)", f.Name())
		}
	}
}

// TestPreemptedRequestIsItsOwnImposter backs a claim of TestBugAMinimum's
// comment with the kept counterexample: with a budget of 2 or more, two
// requests suffice when one is preempted and re-admitted with 1 token
// onto blocks that still hold its first attempt.
func TestPreemptedRequestIsItsOwnImposter(t *testing.T) {
	st := runtest.Load(t, filepath.Join(regressionsDir, "bug-a-preempted-self.yaml"))
	rep, err := engine.RunSetup(st, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if sc := st.Scenario; rep.Requests != 2 || sc.Engine.MaxNumBatchedTokens < 2 || rep.Preemptions == 0 {
		t.Fatalf("want 2 requests, budget ≥ 2 and a preemption; got %d, %d, %d", rep.Requests, st.Scenario.Engine.MaxNumBatchedTokens, rep.Preemptions)
	}
	self := false
	for _, im := range rep.Imposters {
		self = self || im.PrevOwner == im.RequestID
	}
	if !self {
		t.Fatalf("no imposter read its own earlier state: %+v", rep.Imposters)
	}
}
