package sched

import (
	"slices"
	"testing"

	"statesim/model"
	"statesim/statecache"
)

// newTestSched builds a scheduler over an attention-only layout with block
// size 16 and n blocks, so block arithmetic is easy to work by hand.
func newTestSched(t *testing.T, cfg Config, v Version, nBlocks int) *Scheduler {
	t.Helper()
	sh, err := model.Preset("tiny-attention")
	if err != nil {
		t.Fatal(err)
	}
	l := sh.Layout(16)
	kv := statecache.NewKVCacheManager(&l, nBlocks)
	return New(cfg, kv, v, nil)
}

func addReq(s *Scheduler, id, prompt, out int) *Request {
	r := &Request{ID: RequestID(id), NumPromptTokens: prompt, MaxTokens: out, FirstTokenTime: -1, CorruptStep: -1,
		Blocks: s.KV.NewTable(), ArrivalTime: 0}
	s.AddRequest(r)
	return r
}

type rowWant struct {
	id, scheduled, computed int
}

func checkRows(t *testing.T, out *Output, want []rowWant) {
	t.Helper()
	// Rows are reordered by classification; compare as a set keyed by id.
	if len(out.Rows) != len(want) {
		t.Fatalf("step %d: %d rows, want %d: %+v", out.Step, len(out.Rows), len(want), out.Rows)
	}
	for _, w := range want {
		found := false
		for _, r := range out.Rows {
			if int(r.Req.ID) == w.id {
				found = true
				if r.NumScheduled != w.scheduled || r.NumComputed != w.computed {
					t.Errorf("step %d request %d: scheduled %d computed %d, want %d %d",
						out.Step, w.id, r.NumScheduled, r.NumComputed, w.scheduled, w.computed)
				}
			}
		}
		if !found {
			t.Errorf("step %d: request %d not scheduled", out.Step, w.id)
		}
	}
}

// A worked example of VLLM-FACTS §1: budget 100; request 0 (prompt 60)
// and request 1 (prompt 39) fill 99 tokens, so request 2 — brand new — is
// given exactly 1 token: there is no minimum chunk.
func TestNewRequestGetsExactlyOneToken(t *testing.T) {
	s := newTestSched(t, Config{MaxNumBatchedTokens: 100, MaxNumSeqs: 8, MaxModelLen: 1000, EnableChunkedPrefill: true}, V013, 64)
	addReq(s, 0, 60, 4)
	addReq(s, 1, 39, 4)
	r2 := addReq(s, 2, 50, 4)
	out, err := s.Schedule(0)
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, out, []rowWant{{0, 60, 0}, {1, 39, 0}, {2, 1, 0}})
	if out.NumScheduledTokens != 100 {
		t.Errorf("scheduled %d tokens, want the whole budget 100", out.NumScheduledTokens)
	}
	// num_computed_tokens advances right after scheduling.
	if r2.NumComputedTokens != 1 {
		t.Errorf("request 2 num_computed_tokens %d, want 1", r2.NumComputedTokens)
	}
	// v0.13 classifies the 1-token new request as a decode and moves it first.
	if out.Rows[0].Req.ID != 2 || out.Rows[0].Path != PathDecode || out.NumDecodes != 1 {
		t.Errorf("v0.13: want request 2 first on the decode path, got rows %+v numDecodes %d", out.Rows[0], out.NumDecodes)
	}
	if _, err := s.Update(out, 10); err != nil {
		t.Fatal(err)
	}
	// Step 2: requests 0 and 1 finished their prompts and sampled one token
	// each: they decode 1 token; request 2 continues with its 49 tokens.
	out, err = s.Schedule(10)
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, out, []rowWant{{0, 1, 60}, {1, 1, 39}, {2, 49, 1}})
}

// Without chunked prefill a prompt that does not fit stops the waiting loop.
func TestNoChunkedPrefillStopsWaitingLoop(t *testing.T) {
	s := newTestSched(t, Config{MaxNumBatchedTokens: 100, MaxNumSeqs: 8, MaxModelLen: 1000}, Fixed, 64)
	addReq(s, 0, 60, 4)
	addReq(s, 1, 50, 4)
	addReq(s, 2, 10, 4)
	out, _ := s.Schedule(0)
	checkRows(t, out, []rowWant{{0, 60, 0}})
}

func TestLongPrefillThresholdAndMaxNumSeqs(t *testing.T) {
	s := newTestSched(t, Config{MaxNumBatchedTokens: 100, MaxNumSeqs: 2, MaxModelLen: 1000, EnableChunkedPrefill: true, LongPrefillTokenThreshold: 30}, Fixed, 64)
	addReq(s, 0, 80, 4)
	addReq(s, 1, 80, 4)
	addReq(s, 2, 80, 4)
	out, _ := s.Schedule(0)
	checkRows(t, out, []rowWant{{0, 30, 0}, {1, 30, 0}})
	if len(s.Running) != 2 || len(s.Waiting) != 1 {
		t.Errorf("running %d waiting %d, want 2 and 1 (max_num_seqs 2)", len(s.Running), len(s.Waiting))
	}
}

// Recompute preemption (FCFS): when the pool runs dry for a running
// request, the LAST running request is preempted: its blocks are freed, its
// num_computed_tokens reset to 0, and it goes to the head of the waiting
// queue; no waiting request is admitted in that step.
func TestPreemptsLastRunningRequest(t *testing.T) {
	// 7 usable blocks of 16 tokens.
	s := newTestSched(t, Config{MaxNumBatchedTokens: 1000, MaxNumSeqs: 8, MaxModelLen: 1000, EnableChunkedPrefill: true}, Fixed, 8)
	a := addReq(s, 0, 32, 100) // 2 blocks
	b := addReq(s, 1, 32, 100) // 2 blocks
	c := addReq(s, 2, 48, 100) // 3 blocks: pool now empty
	out, _ := s.Schedule(0)
	checkRows(t, out, []rowWant{{0, 32, 0}, {1, 32, 0}, {2, 48, 0}})
	if s.KV.Pool.NumFree() != 0 {
		t.Fatalf("pool has %d free, want 0", s.KV.Pool.NumFree())
	}
	s.Update(out, 1)
	addReq(s, 3, 8, 10)
	// Step 2: request 0 decodes token 33 and needs a third block: the last
	// running request (2) is preempted to make room.
	out, _ = s.Schedule(1)
	if len(out.Preempted) != 1 || out.Preempted[0] != c {
		t.Fatalf("preempted %v, want request 2", out.Preempted)
	}
	if c.NumComputedTokens != 0 || c.Status != Preempted || c.Blocks.NumHeld() != 0 || c.NumPreemptions != 1 {
		t.Errorf("victim state: computed %d status %v held %d preemptions %d", c.NumComputedTokens, c.Status, c.Blocks.NumHeld(), c.NumPreemptions)
	}
	if s.Waiting[0] != c {
		t.Errorf("victim must go to the head of the waiting queue, got request %d", s.Waiting[0].ID)
	}
	checkRows(t, out, []rowWant{{0, 1, 32}, {1, 1, 32}})
	_ = a
	_ = b
	// The resumed victim recomputes prompt + its sampled token from zero.
	if c.NumTokens() != 49 {
		t.Errorf("victim num_tokens %d, want 49 (prompt 48 + 1 output)", c.NumTokens())
	}
}

// Priority preemption picks the largest (priority, arrival_time).
func TestPriorityVictim(t *testing.T) {
	s := newTestSched(t, Config{MaxNumBatchedTokens: 1000, MaxNumSeqs: 8, MaxModelLen: 1000, EnableChunkedPrefill: true, SchedulingPolicy: Priority}, Fixed, 64)
	x := &Request{ID: 0, Priority: 5, ArrivalTime: 1}
	y := &Request{ID: 1, Priority: 9, ArrivalTime: 0}
	z := &Request{ID: 2, Priority: 9, ArrivalTime: 0}
	s.Running = []*Request{x, y, z}
	if v := s.PreemptVictim(); v != y {
		t.Errorf("victim %d, want 1 (largest priority; first of equal keys)", v.ID)
	}
}

// Each version's classification of the batch [decode, new 1-token, new long]
// (VLLM-FACTS §2).
func TestClassifyByVersion(t *testing.T) {
	mk := func() []Row {
		return []Row{
			{Req: &Request{ID: 0, NumPromptTokens: 10}, NumScheduled: 1, NumComputed: 12},   // decode
			{Req: &Request{ID: 1, NumPromptTokens: 300}, NumScheduled: 1, NumComputed: 0},   // new, 1 token
			{Req: &Request{ID: 2, NumPromptTokens: 200}, NumScheduled: 200, NumComputed: 0}, // new, long
		}
	}
	type want struct {
		order []int
		paths []Path
		init  []bool
	}
	cases := []struct {
		v    Version
		want want
	}{
		// v0.13: num_scheduled ≤ 1 is a decode: request 1 reads its slot.
		{V013, want{[]int{0, 1, 2}, []Path{PathDecode, PathDecode, PathPrefill}, []bool{true, true, false}}},
		// v0.14: the reorder makes 1 a prefill, but the split by query
		// length runs the decode segment up to the first row longer than
		// 1: [decode, new 1-token, new long] keeps 1 on the decode path.
		{V014, want{[]int{0, 1, 2}, []Path{PathDecode, PathDecode, PathPrefill}, []bool{true, true, false}}},
		// fixed: a request still prefilling never decodes.
		{Fixed, want{[]int{0, 1, 2}, []Path{PathDecode, PathPrefill, PathPrefill}, []bool{true, false, false}}},
		// V0: Mamba1 always on the prefill path; has_initial_state from state.
		{V0, want{[]int{0, 1, 2}, []Path{PathPrefill, PathPrefill, PathPrefill}, []bool{true, false, false}}},
	}
	for _, c := range cases {
		rows := mk()
		Classify(c.v, rows, make([]Row, 0, 3), false)
		for i, r := range rows {
			if int(r.Req.ID) != c.want.order[i] || r.Path != c.want.paths[i] || r.HasInitialState != c.want.init[i] {
				t.Errorf("%v row %d: request %d path %v init %v, want request %d path %v init %v",
					c.v, i, r.Req.ID, r.Path, r.HasInitialState, c.want.order[i], c.want.paths[i], c.want.init[i])
			}
		}
	}
	// v0.14's reorder separates new requests from decodes: in
	// [new long, decode, new 1-token] the decode moves first, then the
	// prefills in order; the decode segment ends at the long prefill, so
	// the 1-token row after it is safe...
	rows := []Row{
		{Req: &Request{ID: 2, NumPromptTokens: 200}, NumScheduled: 200},
		{Req: &Request{ID: 0, NumPromptTokens: 10}, NumScheduled: 1, NumComputed: 12},
		{Req: &Request{ID: 1, NumPromptTokens: 300}, NumScheduled: 1},
	}
	nd := Classify(V014, rows, nil, false)
	if nd != 1 || rows[0].Req.ID != 0 || rows[2].Path != PathPrefill {
		t.Errorf("v0.14 [long, decode, 1-token]: numDecodes %d rows %v %v %v", nd, rows[0].Req.ID, rows[1].Req.ID, rows[2].Req.ID)
	}
	// ...while a batch whose rows all have query length 1 is all decodes,
	// new ones included.
	rows = []Row{
		{Req: &Request{ID: 0, NumPromptTokens: 10}, NumScheduled: 1, NumComputed: 12},
		{Req: &Request{ID: 1, NumPromptTokens: 300}, NumScheduled: 1},
	}
	if nd := Classify(V014, rows, nil, false); nd != 2 || rows[1].Path != PathDecode {
		t.Errorf("v0.14 all-1-token batch: numDecodes %d, want 2 with the new request on the decode path", nd)
	}
	// force_prefill_path sends everything through prefill.
	rows = mk()
	if nd := Classify(V013, rows, nil, true); nd != 0 || rows[0].Path != PathPrefill || !rows[0].HasInitialState {
		t.Errorf("force_prefill: numDecodes %d row0 %+v", nd, rows[0])
	}
}

// The V0 control never mixes prefill and decode rows in a step.
func TestV0SeparatesPrefillAndDecode(t *testing.T) {
	s := newTestSched(t, Config{MaxNumBatchedTokens: 100, MaxNumSeqs: 8, MaxModelLen: 1000, EnableChunkedPrefill: true}, V0, 64)
	addReq(s, 0, 60, 3)
	out, _ := s.Schedule(0)
	s.Update(out, 1)
	addReq(s, 1, 30, 3)
	out, _ = s.Schedule(1) // request 1 waiting: a prefill-only step
	checkRows(t, out, []rowWant{{1, 30, 0}})
	s.Update(out, 2)
	out, _ = s.Schedule(2) // nothing waiting: a decode-only step
	checkRows(t, out, []rowWant{{0, 1, 60}, {1, 1, 30}})
}

// Under the priority policy, requests of equal priority and arrival time
// leave the waiting queue in vLLM's request_id order, which is text:
// request 10 before request 9 (Request.__lt__, vllm/v1/request.py).
func TestPriorityTieBreakIsTextual(t *testing.T) {
	st := &State{Cfg: Config{SchedulingPolicy: Priority}}
	for _, id := range []RequestID{9, 10, 2, 100} {
		st.insertByPriority(&Request{ID: id, Priority: 1, ArrivalTime: 5})
	}
	var got []RequestID
	for len(st.Waiting) > 0 {
		got = append(got, st.PopWaiting().ID)
	}
	if want := []RequestID{10, 100, 2, 9}; !slices.Equal(got, want) {
		t.Errorf("popped %v, want %v", got, want)
	}
}
