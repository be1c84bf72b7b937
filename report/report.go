package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"statesim/invariant"
)

// Report is the result of one run. Its JSON form is byte-identical for the
// same scenario and seed.
type Report struct {
	Scenario    string `json:"scenario"`
	Seed        uint64 `json:"seed"`
	VLLMVersion string `json:"vllm_version"`
	// ModelRunner is the model runner the run modelled (v1, v2; empty for
	// the v0 control), settled from engine.model_runner or the release.
	ModelRunner string `json:"model_runner,omitempty"`
	// Notes say where a setting changed nothing the user may expect it to
	// (a patch whose edit is not on the runner's path).
	Notes []string `json:"notes,omitempty"`
	// Warnings are what vLLM would log as a warning at start-up for a
	// setting it overrides (async scheduling turned off by Mamba prefix
	// caching, #33352).
	Warnings       []string `json:"warnings,omitempty"`
	Backend        string   `json:"backend"`
	StateIndexBits int      `json:"state_index_bits"`
	ForcePrefill   bool     `json:"force_prefill_path,omitempty"`
	Model          Model    `json:"model"`
	Cache          Cache    `json:"cache"`
	Requests       int64    `json:"requests"`
	Finished       int64    `json:"finished"`
	Steps          int64    `json:"steps"`
	Preemptions    int64    `json:"preemptions"`
	OutputTokens   int64    `json:"output_tokens"`
	SimTimeS       float64  `json:"sim_time_s"`
	Throughput     struct {
		RequestsPerS     float64 `json:"requests_per_s"`
		OutputTokensPerS float64 `json:"output_tokens_per_s"`
		// OutputTokensPerSWindows is output tokens/s over 1 s windows.
		OutputTokensPerSWindows RatePercentiles `json:"output_tokens_per_s_1s_windows"`
	} `json:"throughput"`
	Latency struct {
		TTFT Percentiles `json:"ttft"`
		ITL  Percentiles `json:"itl"`
		E2E  Percentiles `json:"e2e"`
		// Queue is queueing delay: arrival to first scheduled.
		Queue Percentiles `json:"queue"`
	} `json:"latency"`
	MaxBatchRows int `json:"max_batch_rows"`
	// RowSteps is the rows summed over steps: simulated request-steps.
	RowSteps int64 `json:"row_steps"`

	// Invariants has every invariant with its violation count, in a fixed order.
	Invariants []InvariantCount `json:"invariants"`
	// Violations are the first occurrences of each violated invariant.
	Violations []invariant.Violation `json:"violations"`
	// Imposters are bug A's stale decode reads by brand-new requests: the
	// first ones (a bounded list); ImpostersTotal counts them all.
	Imposters      []Imposter `json:"imposters"`
	ImpostersTotal int64      `json:"imposters_total"`
	// Rejected counts the requests refused at admission, by reason, in
	// the order reasons first occurred (see Reject).
	Rejected []Rejection `json:"rejected,omitempty"`
	// PrefixCache is the prefix cache's counters (nil: caching off).
	PrefixCache *PrefixCache `json:"prefix_cache,omitempty"`
	// MisclassifiedRows are new requests put on a decode path; harmless
	// without Mamba layers, so informational.
	MisclassifiedRows int64 `json:"misclassified_rows"`
	// CorruptedRequests had their state computed from bytes not their own.
	CorruptedRequests int64 `json:"corrupted_requests"`

	// Divergence and DivergentRequests are the numeric backends'
	// comparison with the reference: requests whose log-probs for their
	// own generated tokens differ by more than the threshold.
	Divergence        *DivergenceStats `json:"divergence,omitempty"`
	DivergentRequests []Divergence     `json:"divergent_requests,omitempty"`

	// Extra holds backend-specific sections, keyed by a stable name.
	Extra map[string]any `json:"extra,omitempty"`

	// Tokens is the followed request's log-prob trace (explain).
	Tokens []TokenTrace `json:"-"`
}

// Rejection reasons besides the trace readers' (trace.RejectEmptyPrompt,
// trace.RejectOutOfOrder).
const RejectPromptTooLong = "prompt_too_long" // prompt >= max_model_len

// Rejection is one reason requests were refused at admission, as vLLM's
// front end refuses one bad request and serves the rest.
type Rejection struct {
	Reason string `json:"reason"`
	Count  int64  `json:"count"`
	// FirstLine is the trace line of the first one (0: not from a file);
	// First its message.
	FirstLine int    `json:"first_line"`
	First     string `json:"first"`
}

// Reject counts one refused request.
func (r *Report) Reject(reason string, line int, why string) {
	for i := range r.Rejected {
		if r.Rejected[i].Reason == reason {
			r.Rejected[i].Count++
			return
		}
	}
	r.Rejected = append(r.Rejected, Rejection{Reason: reason, Count: 1, FirstLine: line, First: why})
}

// TotalRejected sums the rejections.
func (r *Report) TotalRejected() int64 {
	var t int64
	for _, x := range r.Rejected {
		t += x.Count
	}
	return t
}

// InvariantCount is one invariant's tally.
type InvariantCount struct {
	Name  string `json:"name"`
	Count int64  `json:"count"`
}

// PrefixCache is vLLM's PrefixCacheStats over the run (queries and hits
// in prompt tokens, looked up once per scheduling of a waiting request;
// requests back from a preemption apart), plus the pool's cached and
// evicted blocks.
type PrefixCache struct {
	Requests             int64   `json:"requests"`
	QueryTokens          int64   `json:"query_tokens"`
	HitTokens            int64   `json:"hit_tokens"`
	HitRate              float64 `json:"hit_rate"`
	PreemptedRequests    int64   `json:"preempted_requests"`
	PreemptedQueryTokens int64   `json:"preempted_query_tokens"`
	PreemptedHitTokens   int64   `json:"preempted_hit_tokens"`
	// CachedBlocks are findable by hash at the end of the run;
	// EvictedBlocks were cached and reused for other contents.
	CachedBlocks  int64          `json:"cached_blocks"`
	EvictedBlocks int64          `json:"evicted_blocks"`
	Groups        []RPrefixGroup `json:"groups"`
	// MambaCacheMode is the Mamba groups' mode (align, all) on a hybrid;
	// DroppedHitTokens the attention hit tokens given up because no Mamba
	// state was cached at their end (a hit must exist in every group).
	MambaCacheMode   string `json:"mamba_cache_mode,omitempty"`
	DroppedHitTokens int64  `json:"dropped_hit_tokens,omitempty"`
	// PartialHitCopies and PartialTailMoves are fine-grained hits'
	// copies-on-write: a hit ending inside a block, and a published
	// partial tail moved off its running request's block.
	PartialHitCopies int64 `json:"partial_hit_copies,omitempty"`
	PartialTailMoves int64 `json:"partial_tail_moves,omitempty"`
}

// RPrefixGroup is one KV cache group's hits.
type RPrefixGroup struct {
	Group       int     `json:"group"`
	Kind        string  `json:"kind"`
	QueryTokens int64   `json:"query_tokens"`
	HitTokens   int64   `json:"hit_tokens"`
	HitRate     float64 `json:"hit_rate"`
}

// Model summarises the model shape.
type Model struct {
	Name            string `json:"name"`
	Layers          int    `json:"layers"`
	AttentionLayers int    `json:"attention_layers"`
	MambaLayers     int    `json:"mamba_layers"`
	DInner          int    `json:"d_inner"`
	DState          int    `json:"d_state"`
	// StateKind is the state layers' kind (mamba1, mamba2, short_conv,
	// gated_delta_net, linear_attention, kda); StateTensors their per-layer
	// state, for kinds d_inner and d_state do not describe.
	StateKind    string   `json:"state_kind,omitempty"`
	StateTensors []string `json:"state_tensors,omitempty"`
}

// mambaKind reports a Mamba1/Mamba2 model, whose report reads as it
// always has; other kinds are named by their own kernels.
func (m *Model) mambaKind() bool {
	return m.StateKind == "" || m.StateKind == "mamba1" || m.StateKind == "mamba2"
}

// stateWords names the state layers, their decode kernel and the state
// they hold.
func (m *Model) stateWords() (layers, kernel, state string) {
	switch m.StateKind {
	case "gated_delta_net":
		return "Gated DeltaNet", "GDN decode kernel (fused_recurrent_gated_delta_rule)", "recurrent state"
	case "kda":
		return "KDA", "KDA decode kernel (fused_recurrent_kda)", "recurrent state"
	case "linear_attention":
		return "linear-attention", "linear-attention decode kernel", "KV state"
	case "short_conv":
		return "ShortConv", "ShortConv decode kernel (causal_conv1d_update)", "conv state"
	}
	return "Mamba", "Mamba decode kernel", "SSM state"
}

// Cache summarises the cache layout and its use.
type Cache struct {
	NumGPUBlocks      int   `json:"num_gpu_blocks"`
	FromOverride      bool  `json:"from_override"`
	BlockSize         int   `json:"block_size"`
	PageBytes         int64 `json:"page_bytes"`
	GroupSize         int   `json:"group_size"`
	AttentionGroups   int   `json:"attention_groups"`
	MambaGroups       int   `json:"mamba_groups"`
	StateStrideElems  int64 `json:"state_stride_elems"`
	FirstWrappingSlot int64 `json:"first_wrapping_slot"`
	HighestSlot       int64 `json:"highest_slot"`
	HighestBlock      int64 `json:"highest_block"`
}

// Count is the number of violations of the named invariant.
func (r *Report) Count(inv invariant.Invariant) int64 { return r.Invariants[inv].Count }

// TotalViolations sums every invariant's count.
func (r *Report) TotalViolations() int64 {
	var t int64
	for _, c := range r.Invariants {
		t += c.Count
	}
	return t
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the human summary.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	bits := fmt.Sprintf("%d-bit state index", r.StateIndexBits)
	runner := ""
	if r.ModelRunner != "" {
		runner = " (model runner " + r.ModelRunner + ")"
	}
	p("statesim: scenario %s (seed %d): vLLM %s%s, backend %s, %s", r.Scenario, r.Seed, r.VLLMVersion, runner, r.Backend, bits)
	if r.ForcePrefill {
		p(", force_prefill_path")
	}
	p("\n")
	for _, n := range r.Notes {
		p("note: %s\n", n)
	}
	for _, w := range r.Warnings {
		p("warning: %s\n", w)
	}
	m := r.Model
	layers, kernel, state := m.stateWords()
	p("model %s: %d layers (%d attention, %d %s)", m.Name, m.Layers, m.AttentionLayers, m.MambaLayers, layers)
	if m.MambaLayers > 0 && m.mambaKind() {
		p(", d_inner %d, d_state %d", m.DInner, m.DState)
	} else if m.MambaLayers > 0 {
		p(", state %s", strings.Join(m.StateTensors, " + "))
	}
	p("\n")
	c := r.Cache
	src := "memory model"
	if c.FromOverride {
		src = "num_gpu_blocks_override"
	}
	p("cache: %d blocks (%s), block size %d tokens, page %d B, %d groups (%d attention, %d %s) of %d layers\n",
		c.NumGPUBlocks, src, c.BlockSize, c.PageBytes, c.AttentionGroups+c.MambaGroups, c.AttentionGroups, c.MambaGroups, layers, c.GroupSize)
	if c.MambaGroups > 0 {
		p("state slots: stride %d elements, highest slot used %d", c.StateStrideElems, c.HighestSlot)
		if c.FirstWrappingSlot >= 0 {
			p(", first slot whose %d-bit address wraps: %d", r.StateIndexBits, c.FirstWrappingSlot)
		}
		p("\n")
	}
	p("run: %d requests, %d finished, %d steps, %d preemptions, %.3f s simulated, %.1f req/s, %.1f output tok/s\n",
		r.Requests, r.Finished, r.Steps, r.Preemptions, r.SimTimeS, r.Throughput.RequestsPerS, r.Throughput.OutputTokensPerS)
	if len(r.Rejected) > 0 {
		p("rejected at admission: %d requests (served the rest, as vLLM does; workload.strict or --strict fails instead)\n", r.TotalRejected())
		for _, x := range r.Rejected {
			p("  %-16s %d, first: %s\n", x.Reason, x.Count, x.First)
		}
	}
	if w := r.Throughput.OutputTokensPerSWindows; w.Windows > 0 {
		p("throughput over %d 1 s windows: p10 %.1f  p50 %.1f  p90 %.1f  max %.1f output tok/s\n", w.Windows, w.P10, w.P50, w.P90, w.Max)
	}
	lat := func(name string, q Percentiles) {
		p("  %-5s p50 %9.3f  p90 %9.3f  p99 %9.3f  max %9.3f ms\n", name, q.P50, q.P90, q.P99, q.Max)
	}
	p("latency (step-time model):\n")
	lat("TTFT", r.Latency.TTFT)
	lat("ITL", r.Latency.ITL)
	lat("E2E", r.Latency.E2E)
	lat("queue", r.Latency.Queue)
	p("\n")
	for _, im := range r.Imposters {
		who := "brand new"
		if im.Preempted {
			who = "back after a recompute preemption"
		}
		p("IMPOSTER: request %d, %s (0 computed tokens), was given %d token at step %d and classified as a decode;\n", im.RequestID, who, im.NumScheduled, im.Step)
		what := fmt.Sprintf("its %s after %d tokens", state, im.PrevTokens)
		if im.PrevContent == "kv" {
			what = fmt.Sprintf("the page held %d tokens of its attention KV", im.PrevTokens)
		}
		p("          the %s read state slot %d, left by request %d (%s, written at step %d).\n",
			kernel, im.Slot, im.PrevOwner, what, im.PrevStep)
	}
	if int64(len(r.Imposters)) < r.ImpostersTotal {
		p("... and %d more imposters (%d in all; --json lists the first %d)\n", r.ImpostersTotal-int64(len(r.Imposters)), r.ImpostersTotal, len(r.Imposters))
	}
	if len(r.Imposters) > 0 {
		p("\n")
	}
	p("invariants:\n")
	for i, ic := range r.Invariants {
		status := "ok"
		if ic.Count > 0 {
			status = fmt.Sprintf("%d VIOLATIONS", ic.Count)
			if ic.Count == 1 {
				status = "1 VIOLATION"
			}
		}
		p("  %-26s %s\n", ic.Name, status)
		n := 0
		for _, v := range r.Violations {
			if int(v.Invariant) == i || v.Name == ic.Name {
				p("    - %s\n", v.String())
				n++
			}
		}
		if shown := int64(n); ic.Count > shown && shown > 0 {
			p("    ... and %d more\n", ic.Count-shown)
		}
	}
	if pc := r.PrefixCache; pc != nil {
		p("prefix cache: %d of %d prompt tokens hit (%.1f%%) over %d lookups; %d blocks cached at the end, %d evicted\n",
			pc.HitTokens, pc.QueryTokens, 100*pc.HitRate, pc.Requests, pc.CachedBlocks, pc.EvictedBlocks)
		if pc.PreemptedRequests > 0 {
			p("  after preemption: %d of %d tokens hit over %d lookups\n", pc.PreemptedHitTokens, pc.PreemptedQueryTokens, pc.PreemptedRequests)
		}
		for _, g := range pc.Groups {
			p("  group %d (%s): %d of %d tokens (%.1f%%)\n", g.Group, g.Kind, g.HitTokens, g.QueryTokens, 100*g.HitRate)
		}
		if pc.MambaCacheMode != "" {
			p("  mamba_cache_mode %s: %d attention hit tokens dropped for want of a Mamba state at their end\n", pc.MambaCacheMode, pc.DroppedHitTokens)
		}
		if pc.PartialHitCopies+pc.PartialTailMoves > 0 {
			p("  fine-grained hits: %d blocks copied for hits inside a block, %d partial tails moved off running requests' blocks\n", pc.PartialHitCopies, pc.PartialTailMoves)
		}
	}
	if r.MisclassifiedRows > 0 {
		p("misclassified rows (new requests on a decode path; informational): %d\n", r.MisclassifiedRows)
	}
	if r.CorruptedRequests > 0 {
		p("requests with corrupted state: %d\n", r.CorruptedRequests)
	}
	if d := r.Divergence; d != nil {
		p("\ndivergent requests (log-probs of the engine's own tokens against a reference that recomputes each request alone):\n")
		p("  %d of %d requests compared diverge (threshold %g); max |Δ log-prob| over all tokens %.4g\n",
			d.RequestsDivergent, d.RequestsCompared, d.Threshold, d.MaxDelta)
		for i, v := range r.DivergentRequests {
			if i == 10 {
				p("  ... and %d more (see --json)\n", len(r.DivergentRequests)-i)
				break
			}
			cause := "UNEXPLAINED: no stale read or wrapped write recorded"
			if v.CorruptStep >= 0 {
				cause = fmt.Sprintf("state corrupted at step %d", v.CorruptStep)
			}
			p("  request %d: first bad token %d (step %d): engine log-prob %.3f for token %d, reference %.3f (it would pick %d); max |Δ| %.3g; %s\n",
				v.RequestID, v.FirstBadToken, v.FirstBadStep, v.EngineLogProb, v.EngineToken, v.RefLogProb, v.RefToken, v.MaxDelta, cause)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// RatePercentiles summarises a rate measured over 1 s windows of
// simulated time (within 0.1%, see package sketch; Max exact).
type RatePercentiles struct {
	Windows int     `json:"windows"`
	P10     float64 `json:"p10"`
	P50     float64 `json:"p50"`
	P90     float64 `json:"p90"`
	Max     float64 `json:"max"`
}

// Percentiles summarises a latency distribution in milliseconds. The
// percentiles are within 0.1% of the exact ones (see package sketch);
// Count and Max are exact.
type Percentiles struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P99   float64 `json:"p99_ms"`
	Max   float64 `json:"max_ms"`
}
