package sched

import (
	"fmt"

	"statesim/sim"
)

// Async scheduling (vLLM's AsyncScheduler, vllm/v1/core/sched/
// async_scheduler.py @ 014b2350; the engine's batch queue of two,
// vllm/v1/engine/core.py step_with_batch_queue): step N+1 is scheduled
// before step N's output is applied. A row that samples adds an output
// placeholder (Schedule), so its request is scheduled one token past what
// it knows; the output, when applied, turns a placeholder into a token
// (applyAsync). The engine orders the events (engine/run.go); here are the
// scheduler's halves.

// surelyDone is the running loop's early skip (scheduler.py, "Avoid
// scheduling an extra step when we are sure that the previous step has
// reached request.max_tokens"): with placeholders in flight, the step
// already scheduled produces the last token even if every draft is
// rejected, so another step would be wasted.
func (r *Request) surelyDone() bool {
	return r.NumOutputPlaceholders > 0 &&
		r.NumComputedTokens+2-r.NumOutputPlaceholders >= r.NumPromptTokens+r.MaxTokens
}

// afterSchedule is AsyncScheduler._update_after_schedule for one row,
// once num_computed_tokens has advanced: a row that samples adds 1 + k
// output placeholders (k: the drafts scheduled) and K placeholder drafts
// for the next step (spec_token_ids = [-1] * K), which the worker fills
// in; a prompt chunk drafts nothing. The row's NumComputed becomes the
// model runner's count: the scheduler's still includes drafts the step in
// flight rejected (pendingRejected), the runner's does not.
func (s *Scheduler) afterSchedule(row *Row) {
	r := row.Req
	row.NumComputed -= r.pendingRejected
	if !row.Samples {
		r.NumDrafts = 0
		return
	}
	r.NumOutputPlaceholders += 1 + row.NumDrafts
	r.NumDrafts = s.Spec.K
}

// drawAccepted draws each sampling row's accepted drafts when the step is
// scheduled, in batch row order: the runner knows them before the next
// step runs, which is scheduled before this one's output is applied.
func (s *Scheduler) drawAccepted(out *Output) {
	for i := range out.Rows {
		row := &out.Rows[i]
		row.NumAccepted = 0
		if row.Samples {
			row.NumAccepted = s.Spec.acceptedOf(row)
		}
	}
	s.runnerPending = out
}

// applyRunner gives the requests of the last scheduled step, which has
// run, the runner's view of it: the state column the next decode reads
// (num_accepted_tokens), and the rejected drafts the scheduler's count
// keeps until the step's output is applied.
func (s *Scheduler) applyRunner() {
	out := s.runnerPending
	if out == nil {
		return
	}
	s.runnerPending = nil
	for i := range out.Rows {
		row := &out.Rows[i]
		r := row.Req
		if r.Status != Running {
			continue
		}
		r.NumAccepted = 1
		if row.Samples {
			r.NumAccepted = 1 + row.NumAccepted
			r.pendingRejected, r.pendingStep = row.NumDrafts-row.NumAccepted, out.Step
		}
	}
}

// applyAsync is update_from_output and AsyncScheduler.
// _update_request_with_output for one sampling row of step: the rejected
// drafts come off num_computed_tokens and the placeholders (a step late:
// the step scheduled since counted them), the sampled tokens up to a stop
// replace their placeholders, and the blocks whose tokens are all known are
// cached (cache_blocks(request, num_computed − num_output_placeholders))
// for a request still running. A request preempted while its step was in
// flight keeps the tokens (update_from_output does not skip preempted
// requests) and may finish from the waiting queue.
func (s *Scheduler) applyAsync(step int64, row *Row, now sim.Time) error {
	r := row.Req
	tokens := 1
	if s.Spec.On() {
		if rej := row.NumDrafts - row.NumAccepted; rej > 0 {
			if r.NumComputedTokens > 0 {
				r.NumComputedTokens -= rej
			}
			if r.NumOutputPlaceholders > 0 {
				r.NumOutputPlaceholders -= rej
			}
		}
		if r.pendingStep == step {
			r.pendingRejected = 0
		}
		tokens += row.NumAccepted
	}
	if r.NumOutputPlaceholders < tokens {
		return fmt.Errorf("request %d: %d tokens arrived for %d placeholders", r.ID, tokens, r.NumOutputPlaceholders)
	}
	wasRunning := r.Status == Running
	emitted := 0
	for range tokens {
		emitted++
		if s.emit(r, now) {
			break // a stop mid-way drops the tokens after it
		}
	}
	// Only the tokens kept turn placeholders into tokens
	// (num_output_placeholders -= len(new_token_ids), after the base
	// class trims them at the stop): the cache below counts known tokens.
	r.NumOutputPlaceholders -= emitted
	if !wasRunning || !s.KV.PrefixCaching() {
		return nil
	}
	s.hashes(r)
	return s.KV.CacheBlocks(r.ID, &r.Blocks, r.NumComputedTokens-r.NumOutputPlaceholders, r.BlockHashes)
}

// dropFinished removes q's finished requests in place, keeping the
// others' order, and clears the tail so the dropped ones can be collected.
func dropFinished(q []*Request) []*Request {
	k := 0
	for _, r := range q {
		if r.Status != Finished {
			q[k] = r
			k++
		}
	}
	clear(q[k:])
	return q[:k]
}
