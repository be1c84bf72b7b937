package sched

// The V1 runner's num_accepted_tokens under async scheduling, speculative
// decoding and align mode, as a buffer in row order (vLLM @ 6adad0876).
//
// After step N samples, _update_states_after_model_execute has
// postprocess_mamba_align_gpu copy each row's accepted count into
// input_batch.num_accepted_tokens_cpu_tensor, non-blocking, in step N's
// row order (mamba_utils.py), and records num_accepted_tokens_event.
// Step N+1's _update_states then moves rows of that same array on the
// host without waiting on the event: add_request writes 1, condense()
// copies the tail row into a hole, swap_states (the reorder) swaps
// (gpu_input_batch.py). Only _prepare_inputs synchronizes, and then
// gathers each row's count from its previous row (prev_positions, from
// prev_req_id_to_index: the rows of step N that sampled; 1 for the
// others), as #38556 (757068dc6) added; preprocess_mamba takes the
// gathered count as the state copy's accept_token_bias, and the kernel
// reads num_accepted_tokens re-synced from it (gpu_model_runner.py).
//
// The gather is right only if the copy lands after the rows move: in
// step N's order, it overwrites the moved values. It lands before them
// when the host reaches step N+1's _update_states after step N ended, and
// then the moves have already carried the counts into step N+1's order and
// the gather permutes them a second time. Before #40172 (b730c4635) align
// mode wrote the counts with a blocking .cpu() in step N's sample_tokens,
// so they always landed first. From it the copy is non-blocking: statesim
// spends no host time, so the engine says (HostBehind) whether the host,
// timing.host_step_us after scheduling, is past the end of the step in
// flight; a step it scheduled after that step's output (the engine waited)
// never ran behind it. Open PR #53919 waits on the event before the first
// row move and reads the counts in place.

// acceptedBuffer reports whether the runner reads num_accepted_tokens
// through the persistent batch's row-order buffer.
func (s *Scheduler) acceptedBuffer() bool {
	return s.Cfg.AsyncScheduling && s.Spec.On() && s.Cfg.MambaAlignBlockSize > 0 &&
		s.Runner == RunnerV1 && s.behaviour().Reorder != ReorderNone
}

// land is step out's accepted-count copy arriving in the buffer: row i
// gets its count (1 + accepted drafts for a row that sampled, else the
// sampler's 1), and each sampling row's request remembers its row
// (prev_req_id_to_index).
func (s *Scheduler) land(out *Output) {
	acc := s.Batch.accepted
	for i := range out.Rows {
		row := &out.Rows[i]
		if i < len(acc) {
			acc[i] = 1
			if row.Samples {
				acc[i] = int32(1 + row.NumAccepted)
			}
		}
		if row.Samples {
			row.Req.prevRow, row.Req.prevStep = int32(i+1), out.Step+1
		}
	}
	s.landed = out.Step + 1
	s.landing = nil
}

// gather is _prepare_inputs' read of the buffer for step out, whose rows
// have moved: through prev_positions, or in place under #53919. A request
// that was a sampling row of the last step takes the count as the
// runner's num_accepted_tokens; the buffer keeps what was read.
func (s *Scheduler) gather(out *Output) {
	acc := s.Batch.accepted
	s.Batch.scratch = s.Batch.scratch[:0]
	for i := range out.Rows {
		r := out.Rows[i].Req
		v := int32(1)
		switch {
		case r.prevStep != s.landed || r.prevRow == 0:
			// new to the last step's rows: 1
		case s.behaviour().AwaitAccepted:
			v = acc[i]
		default:
			v = acc[r.prevRow-1]
		}
		s.Batch.scratch = append(s.Batch.scratch, v)
	}
	for i := range out.Rows {
		r := out.Rows[i].Req
		acc[i] = s.Batch.scratch[i]
		if r.prevStep == s.landed && r.prevRow > 0 {
			r.NumAccepted = int(acc[i])
		}
	}
}
