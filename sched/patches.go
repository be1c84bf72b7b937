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
}

var prs = []pr{
	{32118, V014, nil, "reorder: num_computed == 0 is prefill"},
	{37303, V019, []int{32118}, "four-region reorder; Mamba split forces is_prefilling"},
	{42430, V022, []int{37303}, "Mamba split forces only stateless rows (short extends decode)"},
	{51565, V031, []int{42430}, "GDN split forces stateless rows"},
	{51483, V031, []int{42430}, "Kimi-K3 KDA split forces stateless rows"},
	{33352, V019, nil, "async scheduling off with Mamba prefix caching"},
	{33997, V019, []int{33352}, "align mode frees on num_computed - K; async scheduling back on for align"},
	{53059, numVersions, nil, "uniform-decode CUDA-graph dispatch requires no prefilling row (open)"},
	{55898, numVersions, nil, "runner reorder threshold: the stateful builders' 1 + K wins over the drafter's 1 (open)"},
	{48375, numVersions, nil, "MambaManager honours drop_eagle_block: no Mamba state past the EAGLE-dropped attention hit (open)"},
	{57128, numVersions, nil, "no EAGLE margin for the Mamba group and its finder drops a block: the state a block below the attention hit (open)"},
	// Merged 2026-07-02, so first in one of v0.23..v0.28; statesim's v0.22
	// row stands for v0.22..v0.30, so here it is in from v0.22. Only Model
	// Runner V2 reads it (the default from v0.29, which has it).
	{47381, V022, nil, "Model Runner V2 orders uniform decodes (query length 1 + K) first, then by query length"},
	// Read in vLLM's V2 runner at 0036d38d; the number is the one a fork's
	// image check gives it. No release is known to contain it.
	{51865, numVersions, nil, "Model Runner V2's uniform-decode dispatch requires no prefilling row (has_prefill)"},
	// Merged 2026-03-16, the day before #37303: first in v0.19.0 with it
	// (inferred, docs/model.md "Classification").
	{34871, V019, nil, "GDN spec branch: rows without drafts beside spec decodes are prefills"},
	{47808, V028, []int{47381}, "Model Runner V2 sorts rows with drafts first, then uniform decodes, then by query length"},
}

const (
	baseBits = 3 // releases V013..V0 fit in 3 bits
	baseMask = 1<<baseBits - 1
	numPRs   = 15 // len(prs), checked at init; the set fits Version's bits above baseBits
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
	switch {
	case has(57128):
		b.EagleMamba = statecache.EagleMambaNoMargin
	case has(48375):
		b.EagleMamba = statecache.EagleMambaHonored
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
