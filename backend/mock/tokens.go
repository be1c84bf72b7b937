package mock

import (
	"math"

	"statesim/sim"
	"statesim/statecache"
)

// Token and log-prob definitions (docs/numeric-model.md §4).

// promptSalt and sampleSalt separate the prompt and sampling streams of a
// request seed.
const (
	promptSalt uint64 = 0x70726f6d7074 // "prompt"
	sampleSalt uint64 = 0x73616d706c65 // "sample"
	draftSalt  uint64 = 0x6472616674   // "draft"
	prefixSalt uint64 = 0x707265666978 // "prefix"
)

// DraftToken is the drafter's proposal for position pos of a request:
// Mix(seed ⊕ Mix(pos ⊕ "draft")) mod vocab. The mock's drafter guesses
// blindly; the run's acceptance model (engine.speculative) decides which
// drafts the sampler keeps, and an accepted draft is scored like any
// other generated token.
func DraftToken(seed uint64, pos int, vocab int) int32 {
	return int32(sim.Mix(seed^sim.Mix(uint64(pos)^draftSalt)) % uint64(vocab))
}

// PromptToken is the id of a request's prompt token at position pos:
// Mix(seed ⊕ Mix(pos ⊕ "prompt")) mod vocab, with Mix splitmix64's
// finaliser (sim.Mix).
func PromptToken(seed uint64, pos int, vocab int) int32 {
	return int32(sim.Mix(seed^sim.Mix(uint64(pos)^promptSalt)) % uint64(vocab))
}

// PrefixToken is the id of the token at offset off of a shared prefix
// segment (statecache.Segment, the content id the block hashes are made
// of): Mix(id ⊕ Mix(off ⊕ "prefix")) mod vocab. Requests naming the same
// segment share its tokens, whatever their seeds.
func PrefixToken(id uint64, off int, vocab int) int32 {
	return int32(sim.Mix(id^sim.Mix(uint64(off)^prefixSalt)) % uint64(vocab))
}

// PromptTokenOf is the prompt token at position pos of a request whose
// prompt starts with the segments prefix: a segment's token there
// (PrefixToken), past them the request's own (PromptToken).
func PromptTokenOf(seed uint64, prefix []statecache.Segment, pos int, vocab int) int32 {
	off := pos
	for _, s := range prefix {
		n := max(int(s.Tokens), 0)
		if off < n {
			return PrefixToken(s.ID, off, vocab)
		}
		off -= n
	}
	return PromptToken(seed, pos, vocab)
}

// Greedy is the argmax of logits, ties to the lowest id.
func Greedy(logits []float32) int32 {
	best := 0
	for i, l := range logits {
		if l > logits[best] {
			best = i
		}
	}
	return int32(best)
}

// LogSumExp is max + log Σ exp(l − max) over the logits, in float64, summed
// from id 0 up.
func LogSumExp(logits []float32) float64 {
	mx := float64(logits[Greedy(logits)])
	var sum float64
	for _, l := range logits {
		sum += exp64(float64(l) - mx)
	}
	// sum ≥ 1 (the max contributes exactly 1); log1p keeps it portable.
	return mx + math.Log1p(sum-1)
}

// LogProb is the log-probability of token under the raw (temperature 1)
// distribution, which is what vLLM reports as a sampled token's logprob.
func LogProb(logits []float32, token int32) float64 {
	return float64(logits[token]) - LogSumExp(logits)
}

// SampleUniform is the uniform in [0, 1) used to sample the token at
// position pos of a request: 53 bits of Mix(Mix(seed ⊕ "sample") ⊕ pos).
func SampleUniform(seed uint64, pos int) float64 {
	x := sim.Mix(sim.Mix(seed^sampleSalt) ^ uint64(pos))
	return float64(x>>11) * (1.0 / (1 << 53))
}

// Sample picks the token at position pos: greedy at temperature ≤ 0,
// otherwise inverse-CDF sampling of softmax(logits / T), cumulated from id
// 0 up in float64: the first id whose cumulative weight exceeds u·Σ.
func Sample(logits []float32, temperature float64, seed uint64, pos int) int32 {
	if temperature <= 0 {
		return Greedy(logits)
	}
	mx := float64(logits[Greedy(logits)])
	var sum float64
	for _, l := range logits {
		sum += exp64((float64(l) - mx) / temperature)
	}
	target := SampleUniform(seed, pos) * sum
	var cum float64
	for i, l := range logits {
		cum += exp64((float64(l) - mx) / temperature)
		if cum > target {
			return int32(i)
		}
	}
	return int32(len(logits) - 1)
}
