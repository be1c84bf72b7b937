package sched

import "math/rand/v2"

// SpecMethod is speculative_config.method.
type SpecMethod uint8

const (
	SpecOff    SpecMethod = iota // no speculative decoding (K = 0)
	SpecMTP                      // the model's own MTP layers draft (Nemotron-H, Qwen3-Next)
	SpecEAGLE                    // an EAGLE head drafts
	SpecNgram                    // prompt lookup: no draft model, no drafter cache group
	SpecDFlash                   // a DFlash drafter: K mask queries after one bonus query, its own KV cache groups
)

var specMethodNames = [...]string{"", "mtp", "eagle", "ngram", "dflash"}

func (m SpecMethod) String() string { return specMethodNames[m] }

// ParseSpecMethod reads engine.speculative.method ("" is off).
func ParseSpecMethod(s string) (SpecMethod, error) {
	return parseName[SpecMethod](specMethodNames[:], "method", s)
}

// Acceptance is how many of a row's scheduled drafts the rejection
// sampler accepts: a fixed count (capped at the drafts), or each draft in
// turn with probability Rate until the first rejection.
type Acceptance struct {
	Fixed int     // >= 0: accept min(Fixed, drafts); < 0: use Rate
	Rate  float64 // per-token acceptance probability
}

// Spec is speculative decoding as the scheduler and runner see it:
// K = num_speculative_tokens drafts per decode row, and the acceptance
// draws, taken from the scenario's "spec" stream in batch row order at
// each step's update, so that a seed fixes every outcome.
type Spec struct {
	Method SpecMethod
	K      int
	Accept Acceptance
	Rand   *rand.Rand
}

// On reports whether speculative decoding is configured.
func (s *Spec) On() bool { return s != nil && s.K > 0 }

// Lookahead is the scheduler's num_lookahead_tokens: slots allocated past
// the scheduled tokens for the drafter's next proposals (scheduler.py sets
// it to K when speculative_config.use_eagle(), which covers EAGLE and
// MTP; ngram drafts on the CPU and needs none). DFlash takes K + 1, a
// query for the last sampled token and one per draft
// (vllm/config/vllm.py @ 6adad0876, use_dflash).
func (s *Spec) Lookahead() int {
	switch s.Method {
	case SpecMTP, SpecEAGLE:
		return s.K
	case SpecDFlash:
		return s.K + 1
	}
	return 0
}

// DraftLayers is how many attention layers the drafter registers in the
// KV cache spec: one for EAGLE (its head's decoder layer) and for MTP
// (num_nextn_predict_layers is 1 in the modelled configs: Qwen3-Next,
// Nemotron-H MTP); ngram has no draft model.
func (s *Spec) DraftLayers() int {
	if s.On() && (s.Method == SpecMTP || s.Method == SpecEAGLE) {
		return 1
	}
	return 0
}

// DrafterThreshold is the reorder_batch_threshold the drafter's attention
// group reports, 0 where there is none. The draft layer shares the
// target's attention KV cache group (model.LayoutWithDrafter) but is its
// own attention group, the runner's unit of (KV cache group, backend): EAGLE and MTP drafters pick their
// attention backend independently of the target's
// (llm_base_proposer.py: "Never inherit the attention backend from
// base"), and the FlashInfer builder they land on reports 1 without the
// trtllm-gen decode kernel (issue #55894).
func (s *Spec) DrafterThreshold() int {
	if s.Method == SpecMTP || s.Method == SpecEAGLE {
		return 1
	}
	return 0
}

// accepted draws how many of drafts drafts the sampler accepts.
func (s *Spec) accepted(drafts int) int {
	if drafts <= 0 {
		return 0
	}
	if s.Accept.Fixed >= 0 {
		return min(s.Accept.Fixed, drafts)
	}
	a := 0
	for a < drafts && s.Rand.Float64() < s.Accept.Rate {
		a++
	}
	return a
}

// acceptedOf draws row's accepted drafts: none of the scheduler's
// placeholders (-1 is never a sampled token), and no draw for them.
func (s *Spec) acceptedOf(row *Row) int {
	if row.Placeholders {
		return 0
	}
	return s.accepted(row.NumDrafts)
}

// Thresholds are a step's decode thresholds: the runner's, which the
// batch reorder uses, and the state builders' own, which their split
// uses.
type Thresholds struct {
	Runner, Builder int
}

// thresholds is the runner's and the state builders' decode threshold
// under b with K drafts: the Mamba and GDN builders raise theirs to 1 + K
// (_init_reorder_batch_threshold(1, use_spec_decode)), and the runner
// takes the minimum over every attention group
// (calculate_reorder_batch_threshold), the drafter's included (#55894),
// unless #55898 lets the stateful builders' requirement win.
func (b *Behaviour) thresholds(s *Spec) Thresholds {
	if s == nil || s.K == 0 {
		return Thresholds{decodeThreshold, decodeThreshold}
	}
	t := Thresholds{1 + s.K, 1 + s.K}
	if d := s.DrafterThreshold(); d > 0 && !b.ThresholdMax {
		t.Runner = min(t.Runner, d)
	}
	return t
}
