package sched

import (
	"fmt"
	"slices"

	"statesim/statecache"
	"strconv"
	"strings"
)

// A PR is one vLLM pull request statesim models as a switch on the batch
// behaviour, so that engine.patches can add or remove it on top of a
// release. Each release is the set of PRs it contains (TestReleasesArePRSets
// checks that the set rebuilds the release's row of behaviours).
type pr struct {
	num int
	// in is the first release containing it; numVersions for a PR that
	// no release contains (open when last read).
	in Version
	// needs are the PRs whose rule this one edits: without them its code
	// does not exist.
	needs []int
	what  string
	// state is what vLLM's tracker says of it; it changes no behaviour.
	state status
}

// status is a PR's state upstream, as the stores this project searches had
// it: merged on main (date, commit, first release and how that is known)
// or open (the latest date it was seen open). docs/bugs.md, "Patch
// states", gives the evidence for each.
type status struct {
	merged  string // YYYY-MM-DD it merged on main; "" while open
	commit  string // the merge commit on main, where found
	release string // first vLLM release that ships it ("v0.19.0"); "" if not established
	how     string // how release is known, or why it is not
	asOf    string // open: the latest date it was seen open; closed: the date it was seen closed
	closed  bool   // closed without merging (asOf dates it)
	note    string // a disagreement with in, or a caveat
}

var prs = []pr{
	{32118, V014, nil, "reorder: num_computed == 0 is prefill",
		status{merged: "2026-01-12", commit: "8fb2c135b", release: "v0.14.0", how: "VLLM-FACTS §2"}},
	{37303, V019, []int{32118}, "four-region reorder; Mamba split forces is_prefilling",
		status{merged: "2026-03-20", commit: "e1d85e5c2", release: "v0.19.0", how: "inferred: v0.18.0 (out by 2026-03-23) was branched before the merge",
			note: "docs/model.md dates the merge 2026-03-17; the commit on main is dated 2026-03-20"}},
	{42430, V022, []int{37303}, "Mamba split forces only stateless rows (short extends decode)",
		status{merged: "2026-05-18", commit: "47829b115", release: "v0.22.0", how: "inferred: v0.21.0 was out by 2026-05-16"}},
	{51565, V031, []int{42430}, "GDN split forces stateless rows",
		status{merged: "2026-09-22", release: "v0.31.0", how: "inferred: merged the day v0.30.0 was published, whose rc1 was out by 2026-09-19; no cherry-pick found",
			note: "a third-party v0.30.0 build log (2026-09-24) calls it v0.30.0's; not checked against the tag"}},
	{51483, V031, []int{42430}, "Kimi-K3 KDA split forces stateless rows",
		status{merged: "2026-09-16", commit: "f8b5c1146", release: "v0.31.0", how: "inferred, as #51565",
			note: "merged before v0.30.0rc1 was out (by 2026-09-19): if the v0.30 branch was cut after 2026-09-16, v0.30.0 has it; not established"}},
	{33352, V019, nil, "async scheduling off with Mamba prefix caching",
		status{merged: "2026-01-30", commit: "ec51831a2", how: "one of v0.15.0..v0.18.x, not established; those releases are not modelled, so it is in from v0.19 here"}},
	{33997, V019, []int{33352}, "align mode frees on num_computed - K; async scheduling back on for align",
		status{merged: "2026-02-14", commit: "d5fe3f702", how: "one of v0.16.0..v0.18.x, not established; those releases are not modelled, so it is in from v0.19 here"}},
	{53059, numVersions, nil, "uniform-decode CUDA-graph dispatch requires no prefilling row (open)",
		status{asOf: "2026-09-13", note: "not in the merged-PR lists read to 2026-10-08"}},
	{55898, numVersions, nil, "runner reorder threshold: the stateful builders' 1 + K wins over the drafter's 1 (open)",
		status{asOf: "2026-09-30", note: "not in the merged-PR lists read to 2026-10-08"}},
	{48375, numVersions, nil, "MambaManager honours drop_eagle_block: no Mamba state past the EAGLE-dropped attention hit (open)",
		status{asOf: "2026-08-17", note: "not in the merged-PR lists read to 2026-10-08"}},
	{57128, numVersions, nil, "no EAGLE margin for the Mamba group and its finder drops a block: the state a block below the attention hit (open)",
		status{asOf: "2026-10-06", note: "not in the merged-PR lists read to 2026-10-08"}},
	// First in one of v0.24..v0.28 (merged after v0.24.0); statesim's v0.22
	// row stands for v0.22..v0.27, so here it is in from v0.22. Only Model
	// Runner V2 reads it (the default from v0.29, which has it).
	{47381, V022, nil, "Model Runner V2 orders uniform decodes (query length 1 + K) first, then by query length",
		status{merged: "2026-07-09", commit: "85b3a7264", how: "one of v0.24.0..v0.28.0 (v0.24.0 was out by 2026-07-01), not established",
			note: "docs/model.md dates the merge 2026-07-02; the commit on main is dated 2026-07-09"}},
	// Merged upstream 2026-08-11 (0a94d85a6, "Require all requests to be
	// decoding for uniform-decode dispatch": get_uniform_decode_token_count
	// with has_prefill, vllm/v1/worker/utils.py, still so at 6adad0876):
	// in v0.28.0 (inferred, as #47808).
	{51865, V028, nil, "Model Runner V2's uniform-decode dispatch requires no prefilling row (has_prefill)",
		status{merged: "2026-08-11", commit: "0a94d85a6", release: "v0.28.0", how: "inferred, as #47808: merged the day after v0.27.0 (2026-08-10), before #50729 (2026-08-17), which v0.28.0 lacks"}},
	{34871, V019, nil, "GDN spec branch: rows without drafts beside spec decodes are prefills",
		status{merged: "2026-03-16", commit: "116ed130f", release: "v0.19.0", how: "inferred, as #37303"}},
	// Closed unmerged: kept as a patch because its rule is the mechanism
	// #43090's thread proposes (docs/model.md, "The hybrid hit and
	// has_initial_state"); no release has it.
	{47491, numVersions, nil, "the hybrid hit skips a Mamba group's miss: the attention hit stands without a Mamba state (closed, never merged)",
		status{asOf: "2026-08-16", closed: true, note: "closed unmerged: #45238's thread, 2026-08-16, says it \"was correctly closed\"; not in the mirror's history to 6adad0876"}},
	{47808, V028, []int{47381}, "Model Runner V2 sorts rows with drafts first, then uniform decodes, then by query length",
		status{merged: "2026-08-12", commit: "7f7a32cfe", release: "v0.28.0", how: "inferred: merged two days after v0.27.0 (2026-08-10), before #50729 (2026-08-17), which v0.28.0 lacks"}},
	// Merged 2026-06-25 (d490b9816); vllm-metal's bump from 0.24.0 to
	// 0.25.1 (its PR #506, 2026-07-14) names pad_spec_decode as new in
	// 0.25. statesim's v0.22 row stands for v0.22..v0.27, so it is in
	// from v0.28 here: v0.25..v0.27 miss it rather than v0.22..v0.24
	// gaining it.
	{45237, V028, nil, "spec decoding pads a waiting request's one-token tail to 1 + K with placeholder drafts",
		status{merged: "2026-06-25", commit: "d490b9816", release: "v0.25.0", how: "vllm-metal #506 (bump 0.24.0 to 0.25.1) names pad_spec_decode as a 0.25 change",
			note: "statesim models it from v0.28 (its v0.22 row stands for v0.22..v0.27)"}},
	// Merged 2026-09-03, a week before v0.29.0 (out by 2026-09-10);
	// whether v0.29.0 or v0.30.0 ships it was not established, and the
	// v0.28 row stands for v0.28..v0.30, so it is in from v0.31 here.
	{55178, V031, []int{42430}, "Mamba builders take a padded prompt tail (stateful, 1 + drafts tokens) as a decode",
		status{merged: "2026-09-03", release: "", how: "merged between v0.28.0 (2026-08-26) and v0.29.0 (out by 2026-09-10); the release branch cut was not found",
			note: "read at vllm-project/vllm 009b0f3b (mamba_attn.py _compute_common_metadata); statesim puts it in v0.31"}},
	// A stored copy of the release notes lists it beside #42430 (v0.22.0,
	// inferred): "GPU-side state postprocessing fused kernel (#40172), run
	// single-token extends as decodes (#42430)".
	{40172, V022, nil, "align mode's accepted counts reach the host by a non-blocking copy (fused GPU postprocess), not a blocking .cpu()",
		status{merged: "2026-05-21", commit: "b730c4635", release: "v0.22.0", how: "inferred: the same release notes as #42430"}},
	{53919, numVersions, nil, "V1 runner awaits the accepted-token copy before moving rows, and drops the prev_positions gather (open)",
		status{asOf: "2026-08-26", note: "the stored thread (opened 2026-08-26) marks it open; not in the merged-PR lists read to 2026-10-08; main at 6adad0876 (2026-08-14) still gathers"}},
	// The KV connector's local hit on hybrids (connector.go). #44243 and
	// #48425 merged while v0.22..v0.27 were cut, which statesim's v0.22
	// row stands for; the row takes the newest (#48425), and v0.22
	// -48425 stands for the releases between them.
	{44243, V022, nil, "with a KV connector on a hybrid, the local hit is the maximum over groups (find_longest_cache_hit_per_group)",
		status{merged: "2026-06-11", commit: "55911db58", how: "one of v0.22.0..v0.24.0 (v0.24.0 was out by 2026-07-01), not established"}},
	{48425, V022, []int{44243}, "the connector's per-group hit falls back to the common hit when no external tokens back it",
		status{merged: "2026-07-23", commit: "229e01e9e", how: "one of v0.25.0..v0.27.0 (v0.27.0 was out 2026-08-10), not established"}},
	// Merged 2026-07-12, between v0.24.0 (out by 2026-07-01) and v0.27.0
	// (2026-08-10); the v0.22 row stands for v0.22..v0.27, so it is in
	// from v0.28 here, as #45237.
	{46384, V028, nil, "the hybrid coordinator gives the Mamba group no EAGLE margin (\"No margin for mamba\"), with partial prefix-cache hits for hybrids",
		status{merged: "2026-07-12", commit: "481e481be", how: "one of v0.25.0..v0.27.0, not established",
			note: "kv_cache_coordinator.py @ 6adad0876 keeps the rule; vllm-ascend #12038 backported it to its 0.23.0 (2026-07-14); statesim models it from v0.28"}},
	// Marconi-style admission for hybrids: #37898 merged while v0.22..v0.24
	// were cut (the v0.22 row takes it, as #44243), #47782 between v0.24
	// and v0.27 (the v0.28 row, as #46384).
	{37898, V022, nil, "align mode's split cuts a looked-up request's chunk to a shared prefix the Mamba groups hold no state for, in whole blocks (Marconi-style admission)",
		status{merged: "2026-06-10", commit: "dc66e01a7", how: "one of v0.22.0..v0.24.0 (v0.24.0 was out by 2026-07-01), not established"}},
	{47782, V028, []int{37898}, "the shared-prefix junction is stored on the request (shared_prefix_boundary) and stops every chunk that crosses it",
		status{merged: "2026-07-13", commit: "8ac837527", how: "one of v0.25.0..v0.27.0, not established"}},
	// Merged 2026-08-06, before v0.27.0 (2026-08-10): as #50344, the
	// v0.28 row takes it.
	{51113, V028, nil, "align-mode prefill chunks end on the block grid up to the prefill's last chunk, one started inside a block stops at the next boundary, and a block wider than the prefill budget advances inside it (#50000's clause, the same row)",
		status{merged: "2026-08-06", commit: "c56f169d9", release: "v0.28.0", how: "inferred: merged four days before v0.27.0 (2026-08-10); main at 6adad0876 has it",
			note: "if v0.27.0 was cut after 2026-08-06 it has it too; not established"}},
	{54076, numVersions, nil, "the scheduler's align-mode chunk split uses the Mamba group's block size, not cache_config.block_size (open)",
		status{asOf: "2026-08-27", note: "open in the stored thread (opened 2026-08-27); main at 6adad0876 splits by cache_config.block_size (Scheduler._mamba_block_aligned_split)"}},
	// Three open PRs make the same change (#53798, #55507 for #53142,
	// #55601 for #55600): the first stands for them.
	{53798, numVersions, nil, "Model Runner V2's add_request seeds the align-mode running state column in Mamba blocks, not cache_config.block_size (open)",
		status{asOf: "2026-09-14", note: "open in the stored threads (opened 2026-08-25); #55507 (2026-09-05) and #55601 (2026-09-06) are the same one-line change, also open; main at 6adad0876 divides by cache_config.block_size"}},
	{50344, V028, []int{48425}, "the per-group hit only for connectors with supports_divergent_local_hybrid_hits (NIXL)",
		status{merged: "2026-08-09", commit: "d6941300f", release: "v0.28.0", how: "inferred: merged the day before v0.27.0 (2026-08-10); main at 6adad0876 has it",
			note: "if v0.27.0 was cut after 2026-08-09 it has it too; not established"}},
}

const (
	baseBits = 3 // releases V013..V0 fit in 3 bits
	baseMask = 1<<baseBits - 1
	numPRs   = 29 // len(prs), checked at init; the set fits Version's bits above baseBits
)

func init() {
	if len(prs) != numPRs || numVersions > 1<<baseBits || baseBits+numPRs > 32 {
		panic("sched: Version holds a release in 3 bits and the PR set above them")
	}
}

// prSet is the set of prs (bit i = prs[i]) release rel contains.
func prSet(rel Version) int {
	set := 0
	for i, p := range prs {
		if rel >= p.in {
			set |= 1 << i
		}
	}
	return set
}

// behaviourOf builds the batch behaviour of a PR set (no name).
func behaviourOf(set int) Behaviour {
	var on [numPRs]int // the set's PR numbers
	n := 0
	for i := range prs {
		if set&(1<<i) != 0 {
			on[n] = prs[i].num
			n++
		}
	}
	return behaviourFrom(func(num int) bool { return slices.Contains(on[:n], num) })
}

// behaviourFrom builds the behaviour of the PR set has reports.
func behaviourFrom(has func(num int) bool) Behaviour {
	b := Behaviour{Reorder: ReorderQueryLen, Mamba: splitDefault, GDN: splitDefault, KDA: splitDefault}
	switch {
	case has(37303):
		b.Reorder = ReorderFourRegion
	case has(32118):
		b.Reorder = ReorderNewLast
	}
	switch {
	case has(42430):
		b.Mamba = splitStateless
	case has(37303):
		b.Mamba = splitPrefilling
	}
	if has(55178) && b.Mamba == splitStateless {
		b.Mamba = splitTail
	}
	b.PadSpecTail = has(45237)
	b.PartialHashHits = has(46384)
	b.AlignChunkEnds = has(51113)
	switch {
	case has(47782):
		b.Marconi = MarconiBoundary
	case has(37898):
		b.Marconi = MarconiHint
	}
	if has(51565) {
		b.GDN = splitStateless
	}
	if has(51483) {
		b.KDA = splitStateless
	}
	b.GraphGuard = has(53059)
	b.GraphGuardV2 = has(51865)
	b.ThresholdMax = has(55898)
	b.UniformFirst = has(47381)
	b.DraftsFirst = has(47808)
	b.SpecNonSpecPrefill = has(34871)
	b.AsyncOffMambaPC = has(33352)
	b.SpecSafeFree = has(33997)
	b.KeepAttentionOnMiss = has(47491)
	b.AwaitAccepted = has(53919)
	b.SeedMambaBlock = has(53798)
	b.ChunkMambaBlock = has(54076)
	b.AcceptedCopyAsync = has(40172)
	switch {
	case has(50344):
		b.ConnectorHit = ConnectorHitCapable
	case has(48425):
		b.ConnectorHit = ConnectorHitReconcile
	case has(44243):
		b.ConnectorHit = ConnectorHitMax
	}
	switch {
	case has(57128):
		b.EagleMamba = statecache.EagleMambaNoMargin
	case has(48375):
		b.EagleMamba = statecache.EagleMambaHonored
	case has(46384):
		b.EagleMamba = statecache.EagleMambaUnmargined
	}
	return b
}

// Release is the vLLM release under v's patches.
func (v Version) Release() Version { return v & baseMask }

// Patched applies patches ("+N" adds PR N, "-N" removes it) to release v.
// A patch on the V0 control, an unknown PR, a no-op (adding a PR the
// release has, removing one it lacks), or a set in which a PR lacks one it
// builds on is an error naming the patch.
func Patched(v Version, patches []string) (Version, error) {
	if len(patches) == 0 {
		return v, nil
	}
	if v == V0 {
		return 0, fmt.Errorf("patches apply to V1 releases, not the v0 control")
	}
	base := prSet(v.Release())
	delta := 0
	for _, p := range patches {
		i, add, err := parsePatch(p)
		if err != nil {
			return 0, err
		}
		if delta&(1<<i) != 0 {
			return 0, fmt.Errorf("%s: PR #%d patched twice", p, prs[i].num)
		}
		if has := base&(1<<i) != 0; has == add {
			verb := "already contains"
			if !add {
				verb = "does not contain"
			}
			return 0, fmt.Errorf("%s: %s %s PR #%d", p, v.Release(), verb, prs[i].num)
		}
		delta |= 1 << i
	}
	set := base ^ delta
	for i, p := range prs {
		if set&(1<<i) == 0 {
			continue
		}
		for _, n := range p.needs {
			j := prIndex(n)
			if set&(1<<j) == 0 {
				return 0, fmt.Errorf("PR #%d (%s) builds on PR #%d, which %s lacks", p.num, p.what, n, describeSet(v.Release(), delta))
			}
		}
	}
	return v.Release() | Version(delta)<<baseBits, nil
}

func describeSet(rel Version, delta int) string {
	var b strings.Builder
	b.WriteString(rel.String())
	for i, p := range prs {
		if delta&(1<<i) == 0 {
			continue
		}
		if prSet(rel)&(1<<i) != 0 {
			b.WriteString("-")
		} else {
			b.WriteString("+")
		}
		b.WriteString(strconv.Itoa(p.num))
	}
	return b.String()
}

func prIndex(num int) int {
	for i, p := range prs {
		if p.num == num {
			return i
		}
	}
	return -1
}

func parsePatch(p string) (i int, add bool, err error) {
	if len(p) < 2 || (p[0] != '+' && p[0] != '-') {
		return 0, false, fmt.Errorf("%q: want +N or -N (a PR number)", p)
	}
	n, err := strconv.Atoi(strings.TrimPrefix(p[1:], "#"))
	if i = prIndex(n); err != nil || i < 0 {
		return 0, false, fmt.Errorf("%q: not a PR statesim models (known: %s)", p, strings.Join(PatchNames(), ", "))
	}
	return i, p[0] == '+', nil
}

// PatchNames lists the PRs engine.patches accepts.
func PatchNames() []string {
	n := make([]string, len(prs))
	for i, p := range prs {
		n[i] = strconv.Itoa(p.num)
	}
	return n
}
