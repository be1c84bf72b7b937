package sched

import (
	"slices"
	"testing"
)

// The buffer's moves are gpu_input_batch.py's @ 6adad0876: add_request
// writes 1 in the row it takes, condense() copies the tail row's count
// into the hole and leaves the tail's own (its loop never clears
// num_accepted_tokens_cpu[last_req_index]), and swap_states swaps.
func TestAcceptedBufferMovesWithRows(t *testing.T) {
	var b InputBatch
	rs := fillBatch(&b, 4)
	copy(b.accepted, []int32{2, 3, 4, 5})
	b.Remove(rs[0])
	b.Remove(rs[1])
	c := &Request{ID: 9}
	b.Add(c) // takes row 0, the lowest hole
	b.Condense()
	if got, want := b.accepted, []int32{1, 5, 4, 5}; !slices.Equal(got, want) {
		t.Fatalf("after add and condense: %v, want %v (row 3 moved to row 1 and kept its count)", got, want)
	}
	rows := []Row{{Req: rs[3]}, {Req: c}, {Req: rs[2]}} // a reorder: 3, c, 2
	b.Place(rows)
	if got, want := b.accepted[:3], []int32{5, 1, 4}; !slices.Equal(got, want) {
		t.Fatalf("after the swaps: %v, want %v", got, want)
	}
}

// acceptedStep runs the transition of #53919's description and #51571's
// example on a scheduler's own batch: step N ran rows [A, B] with B
// accepting 2 drafts (count 3) and A none (count 1); A finished, new
// request C took A's row, and the reorder put decode B before prefill C.
// early: the copy landed before those moves. It returns the count the
// runner gives B for step N+1.
func acceptedStep(t *testing.T, v Version, early bool) int {
	t.Helper()
	s := &Scheduler{Version: v}
	a, bReq, c := &Request{ID: 1}, &Request{ID: 2}, &Request{ID: 3}
	s.Batch.Add(a)
	s.Batch.Add(bReq)
	stepN := &Output{Step: 4, Rows: []Row{
		{Req: a, Samples: true, NumDrafts: 2, NumAccepted: 0},
		{Req: bReq, Samples: true, NumDrafts: 2, NumAccepted: 2},
	}}
	s.landing = stepN
	if early || s.behaviour().AwaitAccepted {
		s.land(stepN)
	}
	s.Batch.Remove(a)
	s.Batch.Add(c)
	s.Batch.Condense()
	next := &Output{Step: 5, Rows: []Row{{Req: bReq, Samples: true}, {Req: c}}}
	s.Batch.Place(next.Rows)
	if s.landing != nil {
		s.land(s.landing)
	}
	s.gather(next)
	if c.NumAccepted != 0 {
		t.Errorf("new request C: num_accepted %d, want it untouched (the gather gives new rows 1)", c.NumAccepted)
	}
	return bReq.NumAccepted
}

func TestAcceptedGatherPermutesTwice(t *testing.T) {
	fix, err := Patched(V028, []string{"+53919"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		v     Version
		early bool
		want  int
	}{
		// The copy lands after the moves: the gather maps step N's order.
		{"late", V028, false, 3},
		// It lands before them: the swap already carried B's 3 to row 0,
		// and the gather reads B's old row 1, now C's fresh 1.
		{"early", V028, true, 1},
		// #53919 waits before the moves and reads in place.
		{"early, #53919", fix, true, 3},
		{"late, #53919", fix, false, 3},
	} {
		if got := acceptedStep(t, tc.v, tc.early); got != tc.want {
			t.Errorf("%s: B's num_accepted_tokens %d, want %d", tc.name, got, tc.want)
		}
	}
}

// Only the V1 runner under async scheduling, speculative decoding and
// align mode reads the counts through the buffer (the non-align async path
// fills 1 and corrects on the GPU since #45100; Model Runner V2 keeps them
// per request state).
func TestAcceptedBufferOnlyWhereV1ReadsIt(t *testing.T) {
	on := func(s *Scheduler) *Scheduler {
		s.Cfg.AsyncScheduling, s.Cfg.MambaAlignBlockSize, s.Spec.K, s.Version = true, 64, 2, V028
		return s
	}
	if !on(&Scheduler{}).acceptedBuffer() {
		t.Fatal("V1, async, spec, align: want the buffer")
	}
	for _, tc := range []struct {
		name string
		edit func(s *Scheduler)
	}{
		{"v2", func(s *Scheduler) { s.Runner = RunnerV2 }},
		{"sync", func(s *Scheduler) { s.Cfg.AsyncScheduling = false }},
		{"no spec", func(s *Scheduler) { s.Spec.K = 0 }},
		{"no align", func(s *Scheduler) { s.Cfg.MambaAlignBlockSize = 0 }},
		{"v0", func(s *Scheduler) { s.Version = V0 }},
	} {
		s := on(&Scheduler{})
		tc.edit(s)
		if s.acceptedBuffer() {
			t.Errorf("%s: the buffer is read", tc.name)
		}
	}
}
