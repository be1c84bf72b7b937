//go:build cuda

package cuda

import (
	"maps"
	"math"
	"slices"
	"sort"

	"statesim/backend/mock"
	"statesim/sched"
)

// Finish compares a finished (or abandoned) request's GPU log-probs with
// the mock's reference run (and, with a shadow, with the mock engine's),
// and frees its data.
func (b *Backend) Finish(r *sched.Request) {
	rd := b.reqs[r.ID]
	if rd == nil {
		return
	}
	delete(b.reqs, r.ID)
	if b.shadow != nil {
		b.shadow.Finish(r)
		if tr, ok := b.shadow.Trace(int64(r.ID)); ok {
			b.compareShadow(&rd.Generated, tr)
		}
	}
	b.compare(int64(r.ID), r.CorruptStep, &rd.Generated)
}

// FlushPending compares every request still in flight, in id order, as it
// stands (a run cut short by checks.max_steps or a stall), so no request
// escapes the comparison; then the shadow's, should it hold any other.
func (b *Backend) FlushPending() {
	for _, id := range slices.Sorted(maps.Keys(b.reqs)) {
		b.Finish(b.reqs[id].req)
	}
	if b.shadow != nil {
		b.shadow.FlushPending()
	}
}

func absDelta(a, c float64) float64 {
	d := math.Abs(a - c)
	if math.IsNaN(d) || math.IsInf(d, 0) {
		return math.MaxFloat64
	}
	return d
}

// compareShadow compares token by token until the sampled ids differ.
func (b *Backend) compareShadow(rd *mock.Generated, tr *mock.Trace) {
	for i, t := range tr.Tokens {
		if i >= len(rd.Tokens) {
			break
		}
		if t.EngineToken != rd.Tokens[i] {
			b.parity.TokenMismatches++
			return
		}
		b.parity.TokensCompared++
		b.parity.MaxDelta = max(b.parity.MaxDelta, absDelta(rd.LogProbs[i], t.EngineLogProb))
	}
}

// compare is the mock's differential check against the reference, with
// the GPU's log-probs as the engine's.
func (b *Backend) compare(id, corruptStep int64, rd *mock.Generated) {
	if len(rd.Tokens) == 0 {
		return
	}
	ref, err := b.ref.Reference(rd.Seed, rd.Prompt, rd.Tokens)
	if err != nil {
		ref = mock.UnknownReference(len(rd.Tokens))
	}
	b.stats.ReferenceTokens += int64(rd.Prompt + len(rd.Tokens) - 1)
	o := mock.Outcome{ID: id, CorruptStep: corruptStep, Generated: rd}
	if dv, bad := mock.Compare(&b.stats, &o, ref, b.cfg.Threshold, nil); bad {
		b.divs = append(b.divs, dv)
	}
}

// Divergences are the divergent requests so far, by id.
func (b *Backend) Divergences() []mock.Divergence {
	out := append([]mock.Divergence(nil), b.divs...)
	sort.Slice(out, func(i, j int) bool { return out[i].RequestID < out[j].RequestID })
	return out
}

// Stats are the comparison counters.
func (b *Backend) Stats() mock.Stats { return b.stats }

// Summary is the report section, also returned by ReportExtra.
func (b *Backend) Summary() Summary {
	s := Summary{Device: b.dev.Name, IndexBits: b.cfg.IndexBits}
	if b.shadow != nil {
		st := b.shadow.Stats()
		p := b.parity
		s.ShadowStats, s.ShadowDivergences, s.Parity = &st, b.shadow.Divergences(), &p
	}
	return s
}

// ReportExtra puts the summary into the run's report under "cuda". It
// flushes first (FlushPending is idempotent), so that the parity covers
// the requests a cut-short run left in flight whichever order the engine
// asks for its abilities in.
func (b *Backend) ReportExtra() (string, any) {
	b.FlushPending()
	return "cuda", b.Summary()
}
