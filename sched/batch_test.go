package sched

import (
	"slices"
	"testing"
)

func batchIDs(b *InputBatch) []int {
	var ids []int
	for i := 0; i < b.Len(); i++ {
		if r := b.At(i); r != nil {
			ids = append(ids, int(r.ID))
		} else {
			ids = append(ids, -1)
		}
	}
	return ids
}

func rowIDs(out *Output) []int {
	var ids []int
	for i := range out.Rows {
		ids = append(ids, int(out.Rows[i].Req.ID))
	}
	return ids
}

// fillBatch adds n new requests, ids 0..n-1, to b, rows 0..n-1.
func fillBatch(b *InputBatch, n int) []*Request {
	r := make([]*Request, n)
	for i := range r {
		r[i] = &Request{ID: RequestID(i)}
		b.Add(r[i])
	}
	return r
}

// gpu_input_batch.py: add_request fills the lowest removed row first and
// appends otherwise; condense() moves the last rows down into the holes
// that remain.
func TestInputBatchAddRemoveCondense(t *testing.T) {
	var b InputBatch
	r := fillBatch(&b, 6)
	b.Remove(r[1])
	b.Remove(r[3])
	b.Add(r[1]) // back, into the lowest hole
	if got, want := batchIDs(&b), []int{0, 1, 2, -1, 4, 5}; !slices.Equal(got, want) {
		t.Fatalf("after re-add: %v, want %v", got, want)
	}
	b.Remove(r[0])
	b.Condense() // holes 0 and 3: 5 moves to 0, then 4 to 3
	if got, want := batchIDs(&b), []int{5, 1, 2, 4}; !slices.Equal(got, want) {
		t.Fatalf("after condense: %v, want %v", got, want)
	}
	b.Remove(r[4]) // a hole at the tail is simply dropped
	b.Condense()
	if got, want := batchIDs(&b), []int{5, 1, 2}; !slices.Equal(got, want) {
		t.Fatalf("after tail removal: %v, want %v", got, want)
	}
	// A recycled request object (zeroed) is in no row.
	*r[2] = Request{ID: 2}
	if b.row(r[2]) >= 0 {
		t.Errorf("a zeroed request still has a row")
	}
}

// Worked steps: rows follow the persistent batch, not the scheduler's
// running-then-waiting order.
func TestPersistentBatchSteps(t *testing.T) {
	s := newTestSched(t, Config{MaxNumBatchedTokens: 100, MaxNumSeqs: 8, MaxModelLen: 1000, EnableChunkedPrefill: true}, V014, 64)
	addReq(s, 0, 4, 1) // finishes after step 0
	addReq(s, 1, 4, 1) // finishes after step 0
	addReq(s, 2, 4, 10)
	addReq(s, 3, 4, 10)
	step := func(now int64, want []int) *Output {
		t.Helper()
		out, err := s.Schedule(0)
		if err != nil {
			t.Fatal(err)
		}
		if got := rowIDs(out); !slices.Equal(got, want) {
			t.Fatalf("step %d rows %v, want %v", out.Step, got, want)
		}
		for i := range out.Rows {
			if s.Batch.row(out.Rows[i].Req) != i {
				t.Fatalf("step %d: row %d is not request %d's batch row", out.Step, i, out.Rows[i].Req.ID)
			}
		}
		if _, err := s.Update(out, 0); err != nil {
			t.Fatal(err)
		}
		return out
	}
	step(0, []int{0, 1, 2, 3})
	// 0 and 1 leave rows 0 and 1; condense moves 3 (the last row) into
	// row 0 and then 2 into row 1. The scheduler's order would be 2, 3.
	step(1, []int{3, 2})
	// The order persists; a new request appends.
	addReq(s, 4, 4, 10)
	out := step(2, []int{3, 2, 4})
	if out.NumDecodes != 2 {
		t.Errorf("num_decodes %d, want 2", out.NumDecodes)
	}
	// Request 2 (row 1) leaves as if finished, and two new requests
	// arrive: the first takes the freed row 1, the second appends.
	s.Batch.Remove(s.Running[0]) // Update does this when a request finishes
	s.Running[0].Status = Finished
	s.Running = s.Running[1:]
	addReq(s, 5, 1, 10) // a new 1-token prompt
	addReq(s, 6, 4, 10)
	// Before the reorder: [3, 5, 4, 6] (5 took row 1). v0.14's reorder
	// keeps decode 3 and 4 ahead: misplaced rows 5 (row 1) and 4 (row 2)
	// swap: [3, 4, 5, 6].
	out = step(3, []int{3, 4, 5, 6})
	// v0.14's split goes by query length: the decode segment runs up to
	// the first row longer than 1, so new request 5 (1 token) decodes.
	if out.NumDecodes != 3 || out.Rows[2].Path != PathDecode {
		t.Errorf("v0.14 num_decodes %d, row 2 path %v: want 3 and the new 1-token request on the decode path", out.NumDecodes, out.Rows[2].Path)
	}
}

// scheduler.py's running loop steps req_index back only for a priority
// victim it had already scheduled in this step; a victim before the index
// with no tokens leaves the index where it was, and the request after the
// one being scheduled is skipped for this step.
func TestPriorityVictimWithNoTokensSkipsNext(t *testing.T) {
	cfg := Config{MaxNumBatchedTokens: 1000, MaxNumSeqs: 8, MaxModelLen: 100, EnableChunkedPrefill: true, SchedulingPolicy: Priority}
	s := newTestSched(t, cfg, Fixed, 11) // 10 usable blocks of 16 tokens
	mk := func(id, prio, computed int) *Request {
		r := &Request{ID: RequestID(id), Priority: prio, NumPromptTokens: computed, NumOutputTokens: 1,
			NumComputedTokens: computed, Status: Running, Blocks: s.KV.NewTable(), FirstTokenTime: -1, CorruptStep: -1}
		if ok, err := s.KV.Allocate(r.ID, &r.Blocks, computed); err != nil || !ok {
			t.Fatalf("allocate %d: %v %v", id, ok, err)
		}
		s.Running = append(s.Running, r)
		return r
	}
	v := mk(0, 9, 99) // 7 blocks; at max_model_len − 1: given 0 tokens
	r := mk(1, 0, 16) // 1 full block: its decode needs a second, and none is free
	x := mk(2, 0, 20) // 2 blocks: its decode fits
	if s.KV.Pool.NumFree() != 0 {
		t.Fatalf("pool has %d free, want 0", s.KV.Pool.NumFree())
	}
	out, err := s.Schedule(0)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Preempted) != 1 || out.Preempted[0] != v {
		t.Fatalf("preempted %v, want request 0", out.Preempted)
	}
	// v (index 0, 0 tokens) leaves the running list while r is at index
	// 1: r shifts to 0, the index moves on to 2, and x is not scheduled.
	if got := rowIDs(out); !slices.Equal(got, []int{1}) {
		t.Errorf("rows %v, want [1]: request 2 is skipped in this step", got)
	}
	_, _ = r, x
}

// _update_states adds the new requests first, then the running ones that
// had left the batch (a step gave them no tokens), then the resumed ones,
// whatever the scheduling order; each takes the lowest free row.
func TestPersistentBatchJoinOrder(t *testing.T) {
	s := newTestSched(t, Config{MaxNumBatchedTokens: 100, MaxNumSeqs: 8, MaxModelLen: 1000, EnableChunkedPrefill: true}, V014, 64)
	const stamp = 7
	a := &Request{ID: 0}                                      // running, in row 0
	gone := &Request{ID: 9}                                   // finished: leaves row 1
	b := &Request{ID: 1}                                      // running, out of the batch
	d := &Request{ID: 2, NumPreemptions: 1, joinStamp: stamp} // resumed from preemption
	c := &Request{ID: 3, joinStamp: stamp}                    // new: left the waiting queue this step
	s.Batch.Add(a)
	s.Batch.Add(gone)
	out := &Output{Rows: []Row{{Req: a}, {Req: b}, {Req: d}, {Req: c}}} // scheduling order
	s.tmp = make([]Row, 0, 8)
	s.updateBatch(out, stamp)
	// c takes the freed row 1, then b and d append.
	if got, want := rowIDs(out), []int{0, 3, 1, 2}; !slices.Equal(got, want) {
		t.Errorf("rows %v, want %v (new, then running, then resumed)", got, want)
	}
	if got, want := batchIDs(&s.Batch), []int{0, 3, 1, 2}; !slices.Equal(got, want) {
		t.Errorf("batch %v, want %v", got, want)
	}
}
