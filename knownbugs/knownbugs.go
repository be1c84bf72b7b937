package knownbugs

import (
	_ "embed"
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"statesim/sched"
	"statesim/setup"
	"statesim/statecache"
)

//go:embed bugs.yaml
var table []byte

// Bug is one row of the table.
type Bug struct {
	ID       string `yaml:"id" json:"id"`
	Title    string `yaml:"title" json:"title"`
	Refs     string `yaml:"refs" json:"refs"`
	Trigger  string `yaml:"trigger" json:"trigger"`
	Releases struct {
		From string `yaml:"from" json:"from"`
		To   string `yaml:"to" json:"to"`
	} `yaml:"releases" json:"releases"`
	Builders   []string `yaml:"builders" json:"builders,omitempty"`
	StateKinds []string `yaml:"state_kinds" json:"state_kinds,omitempty"`
	NeedsPRs   []int    `yaml:"needs_prs" json:"needs_prs,omitempty"`
	Fixes      []Fix    `yaml:"fixes" json:"fixes,omitempty"`
	Spec       []string `yaml:"spec" json:"spec,omitempty"`
	CUDAGraph  []string `yaml:"cudagraph" json:"cudagraph,omitempty"`
	Runner     []string `yaml:"runner" json:"runner,omitempty"`
	Prefix     []string `yaml:"prefix" json:"prefix,omitempty"`
	Async      bool     `yaml:"async" json:"async,omitempty"`
	// IndexBitsBelow: engine.state_index_bits below it (0: any).
	IndexBitsBelow int  `yaml:"index_bits_below" json:"index_bits_below,omitempty"`
	LongPrefill    bool `yaml:"long_prefill" json:"long_prefill,omitempty"`
	// SeedBelowMamba: the model runner's cache_config.block_size is below
	// the Mamba group's block (a smaller group at world size 1).
	SeedBelowMamba bool `yaml:"seed_below_mamba" json:"seed_below_mamba,omitempty"`
	// CacheBelowMamba: the engine core's cache_config.block_size is below
	// the Mamba group's block (a smaller group, any world size).
	CacheBelowMamba bool   `yaml:"cache_below_mamba" json:"cache_below_mamba,omitempty"`
	Property        string `yaml:"property" json:"property"`
	FixedBy         string `yaml:"fixed_by" json:"fixed_by"`
	Search          string `yaml:"search" json:"search"`
}

// Fix is a PR that closes a bug, on one model runner or ("") any.
type Fix struct {
	PR     int    `yaml:"pr" json:"pr"`
	Runner string `yaml:"runner" json:"runner,omitempty"`
}

// Table is the embedded table, in docs/bugs.md's order.
func Table() ([]Bug, error) {
	var bugs []Bug
	dec := yaml.NewDecoder(strings.NewReader(string(table)))
	dec.KnownFields(true)
	if err := dec.Decode(&bugs); err != nil {
		return nil, fmt.Errorf("knownbugs/bugs.yaml: %w", err)
	}
	return bugs, nil
}

// Deployment is what the table's conditions read, from a scenario.
type Deployment struct {
	Release    statecache.Release
	Version    sched.Version
	Builder    string // sched.Builder's name; "" without state layers
	StateKind  string
	Spec       string // off, mtp, eagle, ngram
	CUDAGraph  string
	Runner     string // v1, v2
	Prefix     string // the resolved Mamba cache mode with prefix caching on, else ""
	Async      bool
	IndexBits  int
	LongPrefil bool
	// SeedBelowMamba: setup.Setup.WorkerBlockSize below MambaBlockSize;
	// CacheBelowMamba: CacheBlockSize below it.
	SeedBelowMamba  bool
	CacheBelowMamba bool
}

// Of reads a settled scenario. The v0 control matches no row.
func Of(st *setup.Setup) (Deployment, bool) {
	if !st.V1 {
		return Deployment{}, false
	}
	sc := st.Scenario
	e := &sc.Engine
	d := Deployment{Release: st.Release, Version: st.Version, Spec: "off", CUDAGraph: e.CUDAGraphMode,
		Runner: st.Runner.String(), Async: e.AsyncScheduling, IndexBits: e.StateIndexBits,
		LongPrefil: e.LongPrefillTokenThreshold > 0, SeedBelowMamba: st.MambaBlockSize > 0 && st.WorkerBlockSize < st.MambaBlockSize,
		CacheBelowMamba: st.MambaBlockSize > 0 && st.CacheBlockSize < st.MambaBlockSize}
	if m := e.Speculative.Method; m != "" {
		d.Spec = m
	}
	sh := &sc.Model.Shape
	if sh.NumMambaLayers() > 0 {
		d.StateKind = string(sh.StateKind())
		d.Builder = sched.BuilderOf(sh.StateKind(), sh.Mixer.FullRankGate).String()
	}
	if res := st.Mamba; res.PrefixCaching && sh.NumMambaLayers() > 0 {
		d.Prefix = res.Mode.String()
	}
	return d, true
}

// Applies reports whether b can hit d, and when not, the first condition
// that rules it out.
func (b *Bug) Applies(d Deployment) (bool, string) {
	if d.Builder == "" {
		return false, "no state layers"
	}
	if b.Releases.From != "" {
		lo, hi, err := b.releaseRange()
		if err != nil {
			return false, err.Error()
		}
		// Where the fixes are modelled PRs they decide the end (a patch
		// can remove one from a later release); "to" bounds the rest.
		if !d.Release.AtLeast(lo) || len(b.Fixes) == 0 && !hi.AtLeast(d.Release) {
			return false, fmt.Sprintf("live in %s..%s only", b.Releases.From, b.Releases.To)
		}
	}
	in := func(xs []string, x string) bool { return len(xs) == 0 || slices.Contains(xs, x) }
	switch {
	case !in(b.Builders, d.Builder):
		return false, fmt.Sprintf("needs the %s builder", strings.Join(b.Builders, " or "))
	case !in(b.StateKinds, d.StateKind):
		return false, fmt.Sprintf("needs %s state layers", strings.Join(b.StateKinds, " or "))
	case !in(b.Spec, d.Spec):
		return false, fmt.Sprintf("needs speculative decoding %s", strings.Join(b.Spec, " or "))
	case !in(b.CUDAGraph, d.CUDAGraph):
		return false, fmt.Sprintf("needs cudagraph_mode %s", strings.Join(b.CUDAGraph, " or "))
	case !in(b.Runner, d.Runner):
		return false, fmt.Sprintf("needs model runner %s", strings.Join(b.Runner, " or "))
	case len(b.Prefix) > 0 && !slices.Contains(b.Prefix, d.Prefix):
		return false, fmt.Sprintf("needs prefix caching in mamba_cache_mode %s", strings.Join(b.Prefix, " or "))
	case b.Async && !d.Async:
		return false, "needs async scheduling"
	case b.IndexBitsBelow > 0 && d.IndexBits >= b.IndexBitsBelow:
		return false, fmt.Sprintf("needs state_index_bits below %d", b.IndexBitsBelow)
	case b.LongPrefill && !d.LongPrefil:
		return false, "needs long_prefill_token_threshold > 0"
	case b.CacheBelowMamba && !d.CacheBelowMamba:
		return false, "needs cache_config.block_size below the Mamba group's block (a smaller KV cache group)"
	case b.SeedBelowMamba && !d.SeedBelowMamba:
		return false, "needs the model runner's cache_config.block_size below the Mamba group's block (a smaller KV cache group, world size 1)"
	}
	for _, pr := range b.NeedsPRs {
		if !d.Version.Has(pr) {
			return false, fmt.Sprintf("lives in #%d's code, which %s lacks", pr, d.Version)
		}
	}
	for _, f := range b.Fixes {
		if d.Version.Has(f.PR) && (f.Runner == "" || f.Runner == d.Runner) {
			return false, fmt.Sprintf("closed by #%d in %s", f.PR, d.Version)
		}
	}
	return true, ""
}

func (b *Bug) releaseRange() (lo, hi statecache.Release, err error) {
	if lo, err = statecache.ParseRelease(b.Releases.From); err != nil {
		return lo, hi, fmt.Errorf("%s: releases.from: %w", b.ID, err)
	}
	if hi, err = statecache.ParseRelease(b.Releases.To); err != nil {
		return lo, hi, fmt.Errorf("%s: releases.to: %w", b.ID, err)
	}
	return lo, hi, nil
}

// Verdict is one row judged for a deployment.
type Verdict struct {
	Bug     Bug    `json:"bug"`
	Applies bool   `json:"applies"`
	Why     string `json:"why_not,omitempty"`
}

// Judge judges every row for the settled deployment st, in the table's order.
func Judge(st *setup.Setup) ([]Verdict, error) {
	bugs, err := Table()
	if err != nil {
		return nil, err
	}
	d, ok := Of(st)
	out := make([]Verdict, len(bugs))
	for i, b := range bugs {
		out[i] = Verdict{Bug: b}
		if !ok {
			out[i].Why = "the v0 control"
			continue
		}
		out[i].Applies, out[i].Why = b.Applies(d)
	}
	return out, nil
}
