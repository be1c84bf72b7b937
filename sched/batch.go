package sched

import "slices"

// InputBatch is the model runner's persistent input batch
// (vllm/v1/worker/gpu_input_batch.py, driven by gpu_model_runner's
// _update_states): the order in which rows reach the kernels.
//
// Each step, requests that are not scheduled (finished, preempted, or
// running but given no tokens) leave and free their rows; the step's
// requests that are not in the batch join, each taking the lowest free row
// (new requests first, then running ones, then resumed ones, in scheduling
// order); condense() moves rows from the tail into the holes that are
// left; and the reorder's swaps (Classify) stay in place for the next
// step. It never allocates once its buffers have grown.
type InputBatch struct {
	rows  []*Request // rows[i] holds the request at row i, nil for a hole
	holes []int      // free rows below len(rows), ascending (vLLM's removed heap)
	// accepted is num_accepted_tokens_cpu, by row: its rows move with
	// the requests (add_request writes 1, condense copies, swap_states
	// swaps) and it never shrinks (a fixed max_num_reqs array in vLLM), so
	// a row past the batch keeps what it last held (accepted.go).
	accepted []int32
	scratch  []int32
}

// row is r's row, or -1. Request.batchRow holds row+1 so that a zeroed
// Request is not in any batch.
func (b *InputBatch) row(r *Request) int {
	i := r.batchRow - 1
	if i < 0 || i >= len(b.rows) || b.rows[i] != r {
		return -1
	}
	return i
}

// Len is the number of rows, holes included.
func (b *InputBatch) Len() int { return len(b.rows) }

// At is the request at row i (nil for a hole).
func (b *InputBatch) At(i int) *Request { return b.rows[i] }

// Remove frees r's row (remove_request). condense must follow before the
// rows are read.
func (b *InputBatch) Remove(r *Request) {
	i := b.row(r)
	r.batchRow = 0
	if i < 0 {
		return
	}
	b.removeAt(i)
}

func (b *InputBatch) removeAt(i int) {
	b.rows[i] = nil
	k, _ := slices.BinarySearch(b.holes, i)
	b.holes = slices.Insert(b.holes, k, i)
}

// Add puts r in the lowest free row, or appends it (add_request).
func (b *InputBatch) Add(r *Request) {
	if b.row(r) >= 0 {
		return
	}
	if len(b.holes) > 0 {
		i := b.holes[0]
		b.holes = slices.Delete(b.holes, 0, 1)
		b.rows[i] = r
		r.batchRow = i + 1
		b.accepted[i] = 1
		return
	}
	b.rows = append(b.rows, r)
	r.batchRow = len(b.rows)
	if len(b.accepted) < len(b.rows) {
		b.accepted = append(b.accepted, 1)
	}
	b.accepted[len(b.rows)-1] = 1
}

// Condense moves the last occupied rows into the lowest holes until the
// rows are contiguous (condense()).
func (b *InputBatch) Condense() {
	last := len(b.rows) - 1
	for _, hole := range b.holes {
		for last >= 0 && b.rows[last] == nil {
			last--
		}
		if hole >= last {
			break
		}
		r := b.rows[last]
		b.rows[hole], b.rows[last] = r, nil
		r.batchRow = hole + 1
		b.accepted[hole] = b.accepted[last] // copied; the tail row keeps it
		last--
	}
	for len(b.rows) > 0 && b.rows[len(b.rows)-1] == nil {
		b.rows = b.rows[:len(b.rows)-1]
	}
	b.holes = b.holes[:0]
}

// Place writes rows' requests back in their new order after a reorder, so
// that the next step starts from it (the swaps persist).
func (b *InputBatch) Place(rows []Row) {
	// swap_states swaps num_accepted_tokens_cpu with the rows: a
	// permutation of the batch's rows.
	b.scratch = append(b.scratch[:0], b.accepted[:len(rows)]...)
	for i := range rows {
		b.accepted[i] = b.scratch[rows[i].Req.batchRow-1]
	}
	for i := range rows {
		b.rows[i] = rows[i].Req
		rows[i].Req.batchRow = i + 1
	}
}
