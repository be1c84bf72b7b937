package sched

import (
	"fmt"
	"slices"
	"strings"

	"statesim/statecache"
)

// Version selects the batch reorder and splits of a vLLM release, plus
// any engine.patches on top of it: the low bits are the release, the bits
// above baseBits the set of patched PRs (patches.go's prs, by index). An
// unpatched release is its own value, so V013..V0 compare as before.
type Version uint32

const (
	// V013: vLLM ≤ 0.13. is_decode = num_scheduled ≤ 1: a new request given
	// one token is a decode (bug A).
	V013 Version = iota
	// V014: PR #32118 (first in v0.14.0). The reorder marks num_computed
	// == 0 as prefill, but the Mamba split still goes by query length, so
	// a new 1-token row can still reach the decode kernel.
	V014
	// V019: PR #37303 (merged 2026-03-17, first in v0.19.0): the
	// four-region reorder (decode, short extend, long extend, prefill),
	// and the Mamba builders split with treat_short_extends_as_decodes=
	// False: every row still prefilling, new or not, takes the prefill
	// path.
	V019
	// V022: PR #42430 (merged 2026-05-18, first in v0.22.0): 1-token
	// chunks of requests that already have state (short extends) run as
	// decodes; only rows with no state are forced to prefill. The GDN and
	// Kimi-K3 KDA builders still split with the default flags, so a new
	// 1-token row in a batch of decodes takes their decode kernel. v0.23
	// to v0.27 change nothing here and are its aliases.
	V022
	// V028: Model Runner V2 sorts the rows with drafts first (#47808,
	// merged 2026-08-12, two days after v0.27.0: first in v0.28.0,
	// inferred) and replays a FULL decode graph only when no row is
	// prefilling (#51865, merged 2026-08-11). v0.29 and v0.30 are its
	// aliases.
	V028
	// V031: the GDN builder (#51565, merged 2026-09-22) and Kimi-K3's KDA
	// builder (#51483, merged 2026-09-16) send rows with no state to
	// prefill, as the Mamba builders do since #42430. First in v0.31.0
	// (inferred: docs/model.md says how).
	V031
	// V0: the old engine's control: separate prefill and decode steps, and
	// Mamba1 always on the prefill path.
	V0
	numVersions
)

// Fixed is the newest behaviour modelled ("fixed" in scenarios).
const Fixed = V031

// Reorder is the region rule of reorder_batch_to_split_decodes_and_prefills
// (vllm/v1/attention/backends/utils.py).
type Reorder uint8

const (
	// ReorderQueryLen: is_decode = num_scheduled ≤ threshold; extend and
	// prefill by num_computed among the rest (PR #27367 to v0.13).
	ReorderQueryLen Reorder = iota
	// ReorderNewLast: num_computed == 0 is prefill; decode and extend by
	// query length among the rest (PR #32118).
	ReorderNewLast
	// ReorderFourRegion: decode, short extend, long extend, prefill (PR
	// #37303).
	ReorderFourRegion
	// ReorderNone: no persistent-batch reorder (the V0 control).
	ReorderNone
)

// Forced says which rows a split with treat_short_extends_as_decodes=False
// ORs into is_prefill.
type Forced uint8

const (
	ForceNone       Forced = iota // treat_short_extends_as_decodes=True (the default)
	ForcePrefilling               // is_prefilling: num_computed < num_prompt (PR #37303)
	ForceStateless                // no state yet: num_computed == 0 (PR #42430)
)

// Split is one metadata builder's split_decodes_and_prefills call. It is a
// value, not code, so that each builder (Builder) is a column of the
// version table, and a CUDA-graph shape decision can be added as another.
type Split struct {
	// Off: every row on the prefill path (V0's Mamba1, force_prefill_path).
	Off bool
	// Force is what treat_short_extends_as_decodes=False adds to
	// is_prefill; ForceNone keeps the default flag, whose shortcut makes a
	// batch with max_query_len ≤ threshold all decodes.
	Force Forced
	// Threshold is decode_threshold; 0 means the Mamba builders' 1.
	Threshold int
	// TailDecodes: a row still prefilling, with state and exactly
	// 1 + drafts tokens (a prompt tail the scheduler padded) is a decode
	// (#55178, _compute_common_metadata's padded_prompt_tail_rows); only
	// where the builder is handed num_decode_draft_tokens_cpu.
	TailDecodes bool
}

// Behaviour is what one version does to a scheduled batch: one reorder
// (the runner's, shared by every group) and one split per builder.
type Behaviour struct {
	Name    string
	Reorder Reorder
	Mamba   Split // BuilderMamba (mamba_attn.py)
	GDN     Split // BuilderGDN (gdn_attn.py)
	KDA     Split // BuilderKimiK3KDA (kimi_k3/nvidia/kda_metadata.py)
	// GraphGuard: the runner's uniform-decode check also requires that no
	// row is still prefilling (open PR #53059; cudagraph.go).
	GraphGuard bool
	// GraphGuardV2: Model Runner V2's uniform-decode count requires that
	// no row is prefilling by V2's prefill_len (#51865; cudagraph.go).
	GraphGuardV2 bool
	// ThresholdMax: the runner's reorder threshold is the largest one a
	// stateful builder requires, not the minimum over every group (open
	// PR #55898, for #55894; spec.go).
	ThresholdMax bool
	// UniformFirst: Model Runner V2 orders a step's rows with uniform
	// decodes (query length 1 + K) first, then by query length, instead
	// of by query length alone (#47381; runner.go).
	UniformFirst bool
	// AsyncOffMambaPC: async scheduling is turned off when Mamba prefix
	// caching is on, align or all (#33352); with SpecSafeFree it stays on
	// for align.
	AsyncOffMambaPC bool
	// SpecSafeFree: align mode's MambaManager frees on num_computed_tokens
	// less K, since under async scheduling the count may include drafts
	// the step in flight rejects, and async scheduling is allowed again
	// with align (#33997).
	SpecSafeFree bool
	// EagleMamba: how the Mamba groups' hit lookup treats the EAGLE drop
	// (#53912: ignored in every release; open PRs #48375, #57128).
	EagleMamba statecache.EagleMamba
	// SpecNonSpecPrefill: in the GDN builder's spec branch the rows
	// without drafts are all prefills (#34871: "num_decodes and
	// num_spec_decodes are mutually exclusive", gdn_attn.py @ 116ed130f).
	SpecNonSpecPrefill bool
	// DraftsFirst: Model Runner V2's sort puts rows with drafts before
	// every other row (#47808, sort_batch_req_ids @ 7f7a32cfe).
	DraftsFirst bool
	// KeepAttentionOnMiss: the hybrid hit keeps the attention hit when
	// the Mamba group misses (closed PR #47491, never merged; every
	// release takes the minimum over groups: docs/model.md, "The hybrid
	// hit and has_initial_state").
	KeepAttentionOnMiss bool
	// SeedMambaBlock: Model Runner V2's add_request divides the resumed
	// position by the Mamba group's block (open PR #53798), not by
	// cache_config.block_size (mamba_hybrid.py @ 6adad0876).
	SeedMambaBlock bool
	// ChunkMambaBlock: the scheduler cuts align-mode chunks at multiples
	// of the Mamba group's block (open PR #54076), not of
	// cache_config.block_size (Scheduler._mamba_block_aligned_split @
	// 6adad0876).
	ChunkMambaBlock bool
	// AwaitAccepted: under async scheduling the V1 runner waits on the
	// accepted-token copy before it moves any row, and reads the counts
	// in place (open PR #53919; accepted.go).
	AwaitAccepted bool
	// AcceptedCopyAsync: in align mode the accepted counts reach the
	// host's buffer by a non-blocking copy the next step may outrun, not
	// a blocking .cpu() in the step's own sample_tokens (#40172;
	// accepted.go).
	AcceptedCopyAsync bool
	// ConnectorHit: a new request's local hit with a KV connector on a
	// hybrid (#44243, #48425, #50344; connector.go).
	ConnectorHit ConnectorHit
	// PadSpecTail: the scheduler pads a waiting request's one-token tail
	// to 1 + K with placeholder drafts (#45237; Config.PadSpecTail).
	PadSpecTail bool
	// PartialHashHits: fine-grained (partial-block) prefix-cache hits for
	// hybrids exist (#46384, 481e481be): cache_config.prefix_match_unit,
	// the hybrid coordinator's enable_partial_hash_hits and the align
	// split's tail stop (Config.MambaPartialCacheHit).
	PartialHashHits bool
	// AlignChunkEnds: #51113's align split (Config.AlignChunkEnds).
	AlignChunkEnds bool
	// Marconi: the align split's stop at an uncached shared prefix
	// (#37898, #47782; Config.Marconi).
	Marconi Marconi
}

// Split is the split of builder k.
func (b *Behaviour) Split(k Builder) Split {
	switch k {
	case BuilderGDN:
		return b.GDN
	case BuilderKimiK3KDA:
		return b.KDA
	case BuilderLinear:
		if b.Reorder != ReorderNone {
			return splitDefault // the same call in every V1 release
		}
	}
	return b.Mamba
}

var (
	splitDefault    = Split{}                                         // treat_short_extends_as_decodes=True
	splitPrefilling = Split{Force: ForcePrefilling}                   // #37303's False
	splitStateless  = Split{Force: ForceStateless}                    // #42430; #51565 and #51483 for theirs
	splitTail       = Split{Force: ForceStateless, TailDecodes: true} // and #55178
	splitOff        = Split{Off: true}                                // V0's Mamba1: always prefill
)

// releases holds each release's row, written out here and checked against
// its PR set in TestReleasesArePRSets; a patched version's row is built
// from its PR set when first asked for (behaviour).
var releases = [numVersions]Behaviour{
	V013: {Name: "v0.13", Reorder: ReorderQueryLen, Mamba: splitDefault, GDN: splitDefault, KDA: splitDefault},
	V014: {Name: "v0.14", Reorder: ReorderNewLast, Mamba: splitDefault, GDN: splitDefault, KDA: splitDefault},
	V019: {Name: "v0.19", Reorder: ReorderFourRegion, Mamba: splitPrefilling, GDN: splitDefault, KDA: splitDefault,
		AsyncOffMambaPC: true, SpecSafeFree: true, SpecNonSpecPrefill: true},
	V022: {Name: "v0.22", Reorder: ReorderFourRegion, Mamba: splitStateless, GDN: splitDefault, KDA: splitDefault,
		UniformFirst: true, AsyncOffMambaPC: true, SpecSafeFree: true, SpecNonSpecPrefill: true, AcceptedCopyAsync: true,
		ConnectorHit: ConnectorHitReconcile, Marconi: MarconiHint},
	V028: {Name: "v0.28", Reorder: ReorderFourRegion, Mamba: splitStateless, GDN: splitDefault, KDA: splitDefault,
		GraphGuardV2: true, UniformFirst: true, AsyncOffMambaPC: true, SpecSafeFree: true, SpecNonSpecPrefill: true, DraftsFirst: true, AcceptedCopyAsync: true,
		ConnectorHit: ConnectorHitCapable, PadSpecTail: true, EagleMamba: statecache.EagleMambaUnmargined, PartialHashHits: true,
		AlignChunkEnds: true, Marconi: MarconiBoundary},
	V031: {Name: "v0.31", Reorder: ReorderFourRegion, Mamba: splitTail, GDN: splitStateless, KDA: splitStateless,
		GraphGuardV2: true, UniformFirst: true, AsyncOffMambaPC: true, SpecSafeFree: true, SpecNonSpecPrefill: true, DraftsFirst: true, AcceptedCopyAsync: true,
		ConnectorHit: ConnectorHitCapable, PadSpecTail: true, EagleMamba: statecache.EagleMambaUnmargined, PartialHashHits: true,
		AlignChunkEnds: true, Marconi: MarconiBoundary},
	V0: {Name: "v0", Reorder: ReorderNone, Mamba: splitOff, GDN: splitOff, KDA: splitOff},
}

// behaviour is v's row: a release's from the table, a patched version's
// built from its PR set (a Scheduler keeps its own, Scheduler.behaviour).
func (v Version) behaviour() *Behaviour {
	if v < numVersions {
		return &releases[v]
	}
	b := behaviourOf(prSet(v.Release()) ^ int(v>>baseBits))
	return &b
}

// aliases name releases whose batch behaviour is an earlier release's, in
// release order: v0.23 to v0.27 changed neither the reorder nor any
// builder's split, v0.29 and v0.30 nothing since v0.28 (docs/model.md).
// "fixed" is the newest.
var aliases = []struct {
	name string
	v    Version
}{
	{"v0.23", V022}, {"v0.24", V022}, {"v0.25", V022}, {"v0.26", V022},
	{"v0.27", V022}, {"v0.29", V028}, {"v0.30", V028},
	{"fixed", Fixed},
}

// Since reports whether v's release is w or a later one (never for the V0
// control); patches do not change the release.
func (v Version) Since(w Version) bool { return v.Release() != V0 && v.Release() >= w }

// Behaviour is the version's reorder and split.
func (v Version) Behaviour() Behaviour {
	b := *v.behaviour()
	b.Name = v.String()
	return b
}

func (v Version) String() string {
	if set := int(v >> baseBits); set != 0 {
		return describeSet(v.Release(), set)
	}
	return releases[v].Name
}

// ParseVersion reads a vllm_version value.
func ParseVersion(s string) (Version, error) {
	for i := Version(0); i < numVersions; i++ {
		if releases[i].Name == s {
			return i, nil
		}
	}
	for _, a := range aliases {
		if a.name == s {
			return a.v, nil
		}
	}
	return 0, fmt.Errorf("unknown vllm_version %q (known: %s)", s, strings.Join(VersionNames(), ", "))
}

// VersionNames lists the known versions, then the aliases.
func VersionNames() []string {
	var n []string
	for i := Version(0); i < numVersions; i++ {
		n = append(n, releases[i].Name)
	}
	for _, a := range aliases {
		n = append(n, a.name)
	}
	return n
}

// Region is where the batch reorder puts a row.
type Region uint8

const (
	RegionDecode      Region = iota
	RegionShortExtend        // has state, query ≤ threshold, still prefilling (four-region reorder only)
	RegionExtend             // has state, longer query (the "long extend")
	RegionPrefill            // no state: num_computed == 0
)

func (r Region) String() string {
	return [...]string{"decode", "short-extend", "extend", "prefill"}[r]
}

// Path is the kernel path a row takes in every state layer: the path the
// builder of the model's state layers (Builder) chose.
type Path uint8

const (
	PathPrefill Path = iota // selective_scan_fwd / causal_conv1d_fn
	PathDecode              // selective_state_update / causal_conv1d_update
)

func (p Path) String() string { return [...]string{"prefill", "decode"}[p] }

// decodeThreshold is the Mamba backend's reorder_batch_threshold.
const decodeThreshold = 1

// region is the row's region under rule o, with query length q, computed
// tokens c and prompt length p, for the runner's decode threshold thr.
func (o Reorder) region(q, c, p, thr int) Region {
	switch o {
	case ReorderQueryLen:
		switch {
		case q <= thr:
			return RegionDecode
		case c > 0:
			return RegionExtend
		}
		return RegionPrefill
	case ReorderFourRegion:
		switch {
		case c == 0:
			return RegionPrefill
		case q > thr:
			return RegionExtend
		case c < p:
			return RegionShortExtend
		}
		return RegionDecode
	}
	switch { // ReorderNewLast; ReorderNone labels rows the same way
	case c == 0:
		return RegionPrefill
	case q <= thr:
		return RegionDecode
	}
	return RegionExtend
}

// Classify reorders rows, which are the persistent input batch in row
// order, as the version's reorder does, and assigns each row its kernel
// path in the Mamba builders' layers and its has_initial_state flag.
// forcePrefill is the seeds' diagnostic: every row through the prefill
// path. It returns the number of rows on the decode path (a prefix of
// rows). tmp is scratch of at least len(rows).
func Classify(v Version, rows, tmp []Row, forcePrefill bool) int {
	return ClassifyFor(v, BuilderMamba, rows, tmp, forcePrefill)
}

// ClassifyFor is Classify for a model whose state layers use builder k.
func ClassifyFor(v Version, k Builder, rows, tmp []Row, forcePrefill bool) int {
	nd, _ := classify(v.behaviour(), k, rows, tmp, forcePrefill, nil, RunnerV1)
	return nd
}

// ClassifySpec is ClassifyFor under speculative decoding spec (nil: off).
func ClassifySpec(v Version, k Builder, rows, tmp []Row, forcePrefill bool, spec *Spec) int {
	nd, _ := classify(v.behaviour(), k, rows, tmp, forcePrefill, spec, RunnerV1)
	return nd
}

// ClassifyRunner is ClassifySpec under model runner ru: rows come in
// scheduling order, and under V2 leave in V2's order (runner.go).
func ClassifyRunner(v Version, k Builder, rows, tmp []Row, forcePrefill bool, spec *Spec, ru Runner) int {
	nd, _ := classify(v.behaviour(), k, rows, tmp, forcePrefill, spec, ru)
	return nd
}

// classify is ClassifyRunner that also reports whether the reorder moved
// rows. It returns the rows on the decode path: a prefix of rows, except
// under the GDN builder's spec branch, whose spec rows decode wherever
// they stand (specGDN). Under V2 the region is only a label (at the
// builders' threshold: V2 runs no reorder).
func classify(b *Behaviour, k Builder, rows, tmp []Row, forcePrefill bool, spec *Spec, ru Runner) (nd int, moved bool) {
	th := b.thresholds(spec)
	v2 := ru == RunnerV2 && b.Reorder != ReorderNone
	if v2 {
		th.Runner = th.Builder
	}
	for i := range rows {
		r := &rows[i]
		r.PrefillLen = r.Req.PrefillLen(ru)
		r.Region = b.Reorder.region(r.NumScheduled, r.NumComputed, r.PrefillLen, th.Runner)
	}
	switch {
	case v2:
		moved = orderV2(rows, th.Builder, b.UniformFirst, b.DraftsFirst)
	case b.Reorder != ReorderNone:
		moved = reorder(rows, tmp)
	}
	sp := b.Split(k)
	if forcePrefill {
		sp.Off = true
	}
	drafts := spec.On() && hasSpecRow(rows)
	if k.gdnFamily() && drafts && !sp.Off {
		return specGDN(sp, b.SpecNonSpecPrefill, rows), moved
	}
	// handed: the runner hands this step's builder num_accepted_tokens,
	// which raises its split's decode_threshold to 1 + K
	// (_compute_common_metadata: "reorder_batch_threshold if
	// num_accepted_tokens is not None else 1", mamba_attn.py @ 6adad0876).
	// Of the builders that split by position only Mamba2's gets them: on
	// V1 in a step with drafts (use_spec_decode =
	// len(scheduled_spec_decode_tokens) > 0), on V2 whenever K > 0. The
	// GDN family's non-spec branch passes decode_threshold=1 and none.
	handed := k == BuilderMamba2 && spec.On() && (drafts || v2)
	if sp.Threshold == 0 {
		sp.Threshold = decodeThreshold
		if handed {
			sp.Threshold = 1 + spec.K
		}
	}
	// #55178's mask reads num_decode_draft_tokens_cpu, which only a
	// builder handed num_accepted_tokens gets (mamba2_attn.py build).
	sp.TailDecodes = sp.TailDecodes && handed
	nd = sp.numDecodes(rows)
	for i := range rows {
		rows[i].AcceptedHanded = handed
		if i < nd {
			rows[i].Path = PathDecode
			rows[i].HasInitialState = true
		} else {
			rows[i].Path = PathPrefill
			rows[i].HasInitialState = rows[i].NumComputed > 0
		}
	}
	return nd, moved
}

// hasSpecRow reports a row with drafts scheduled.
func hasSpecRow(rows []Row) bool {
	for i := range rows {
		if rows[i].NumDrafts > 0 {
			return true
		}
	}
	return false
}

// specGDN is the GDN builder's split when the batch has draft rows
// (gdn_attn.py build: the runner's num_decode_draft_tokens is the draft
// count for a row of exactly 1 + drafts tokens, -1 otherwise; the spec
// branch runs when some row's count is positive, spec_sequence_masks =
// count >= 0): spec rows take the spec decode kernel by mask, wherever
// they stand. Of the other rows, since #34871 every one is a prefill
// (spec and non-spec decodes are mutually exclusive); before it a
// 1-token row is a decode (with #51565's flag, only when it has state).
// It returns the number of decode-path rows.
func specGDN(sp Split, nonSpecPrefill bool, rows []Row) int {
	nd := 0
	for i := range rows {
		r := &rows[i]
		decode := r.NumDrafts > 0 && r.NumScheduled == r.NumDrafts+1
		r.AcceptedHanded = decode // num_accepted_tokens[spec_sequence_masks]
		if !decode && !nonSpecPrefill && r.NumScheduled == 1 {
			decode = sp.Force == ForceNone || r.NumComputed > 0
		}
		if decode {
			r.Path, r.HasInitialState = PathDecode, true
			nd++
		} else {
			r.Path, r.HasInitialState = PathPrefill, r.NumComputed > 0
		}
	}
	return nd
}

// numDecodes is split_decodes_and_prefills' num_decodes over rows in batch
// order: the rows before the first prefill.
func (sp Split) numDecodes(rows []Row) int {
	if sp.Off || len(rows) == 0 {
		return 0
	}
	thr := sp.Threshold
	if thr == 0 {
		thr = decodeThreshold
	}
	if sp.Force == ForceNone {
		maxQ := 0
		for i := range rows {
			maxQ = max(maxQ, rows[i].NumScheduled)
		}
		if maxQ <= thr {
			return len(rows) // the shortcut: every row a decode, new ones included
		}
	}
	for i := range rows {
		r := &rows[i]
		prefill := r.NumScheduled > thr
		switch sp.Force {
		case ForcePrefilling:
			prefill = prefill || r.NumComputed < r.PrefillLen
		case ForceStateless:
			// #42430: of the rows still prefilling, only 1-token ones
			// with prior state (seq_len > 1) become decodes; with K = 0
			// that is every row with state the threshold lets through.
			prefill = prefill || r.NumComputed < r.PrefillLen && (r.NumScheduled != 1 || r.NumComputed == 0) &&
				!(sp.TailDecodes && r.NumComputed > 0 && r.NumDrafts > 0 && r.NumScheduled == r.NumDrafts+1)
		}
		if prefill {
			return i
		}
	}
	return len(rows)
}

// reorder is the swap-based reorder: the rows whose region differs from
// the one their position should hold move, sorted stably by region, into
// those out-of-place positions in ascending order; every other row stays
// put. vLLM gets there by following swap cycles (swap_states); the result
// is this permutation, and it persists in the batch. tmp holds the
// misplaced rows while they move.
func reorder(rows, tmp []Row) (moved bool) {
	var end [RegionPrefill + 1]int // end[reg]: one past the last position of reg
	for i := range rows {
		end[rows[i].Region]++
	}
	for reg := RegionDecode + 1; reg <= RegionPrefill; reg++ {
		end[reg] += end[reg-1]
	}
	tmp = tmp[:0]
	reg := RegionDecode
	for i := range rows {
		for i >= end[reg] {
			reg++
		}
		if rows[i].Region != reg {
			tmp = append(tmp, rows[i])
		}
	}
	if len(tmp) == 0 {
		return false // the common batch: already in region order
	}
	slices.SortStableFunc(tmp, func(a, b Row) int { return int(a.Region) - int(b.Region) })
	k := 0
	reg = RegionDecode
	for i := range rows {
		for i >= end[reg] {
			reg++
		}
		if rows[i].Region != reg {
			rows[i] = tmp[k]
			k++
		}
	}
	return true
}
