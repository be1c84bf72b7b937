package sched

import "testing"

// pipeline drives a scheduler in the batch queue's order (step N+1 is
// scheduled before step N's output is applied) until nothing is left,
// and returns the rows of every step, copied.
func pipeline(t *testing.T, s *Scheduler, maxSteps int) [][]rowWant {
	t.Helper()
	var steps [][]rowWant
	var inFlight *Output
	keep := func(out *Output) {
		var rows []rowWant
		for _, r := range out.Rows {
			rows = append(rows, rowWant{int(r.Req.ID), r.NumScheduled, r.NumComputed})
		}
		steps = append(steps, rows)
	}
	for len(steps) < maxSteps && (s.HasUnfinished() || inFlight != nil) {
		var queued *Output
		if s.HasUnfinished() {
			out, err := s.Schedule(0)
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Rows) > 0 {
				keep(out)
				queued = out
			}
		}
		if inFlight != nil {
			if _, err := s.Update(inFlight, 0); err != nil {
				t.Fatal(err)
			}
		}
		inFlight = queued
	}
	return steps
}

// A decode is scheduled one step ahead: the row after a prompt's last
// chunk goes out before that chunk's token is known, so its NumComputed
// is the whole prompt (sync: prompt, then prompt + 1 after the token); a
// request produces exactly max_tokens tokens, the step that would follow
// its last is never scheduled (surelyDone), and the step count equals the
// synchronous one.
func TestAsyncSchedulesOneStepAhead(t *testing.T) {
	cfg := Config{MaxNumBatchedTokens: 64, MaxNumSeqs: 8, MaxModelLen: 1024, EnableChunkedPrefill: true, AsyncScheduling: true}
	s := newTestSched(t, cfg, V022, 64)
	r := addReq(s, 0, 100, 3)
	steps := pipeline(t, s, 20)
	want := [][]rowWant{
		{{0, 64, 0}},  // first chunk: no placeholder
		{{0, 36, 64}}, // last chunk: samples, one placeholder
		{{0, 1, 100}}, // scheduled before the first token is known
		{{0, 1, 101}}, // the third (last) token's step; nothing after
	}
	if len(steps) != len(want) {
		t.Fatalf("steps %v, want %v", steps, want)
	}
	for i := range want {
		if len(steps[i]) != 1 || steps[i][0] != want[i][0] {
			t.Errorf("step %d: %v, want %v", i, steps[i], want[i])
		}
	}
	if r.Status != Finished || r.NumOutputTokens != 3 || r.NumOutputPlaceholders != 0 {
		t.Errorf("request: %v, %d tokens, %d placeholders; want finished, 3, 0", r.Status, r.NumOutputTokens, r.NumOutputPlaceholders)
	}

	sync := newTestSched(t, Config{MaxNumBatchedTokens: 64, MaxNumSeqs: 8, MaxModelLen: 1024, EnableChunkedPrefill: true}, V022, 64)
	addReq(sync, 0, 100, 3)
	if n := len(pipelineSync(t, sync)); n != len(steps) {
		t.Errorf("sync takes %d steps, async %d", n, len(steps))
	}
}

func pipelineSync(t *testing.T, s *Scheduler) []int {
	var n []int
	for s.HasUnfinished() {
		out, err := s.Schedule(0)
		if err != nil {
			t.Fatal(err)
		}
		n = append(n, len(out.Rows))
		if _, err := s.Update(out, 0); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

// Without the early skip a request finishing at max_tokens would be
// scheduled one wasted step more: the test fails if surelyDone is
// dropped (as it does if placeholders are not counted).
func TestAsyncManyRequestsEachGetMaxTokens(t *testing.T) {
	cfg := Config{MaxNumBatchedTokens: 48, MaxNumSeqs: 4, MaxModelLen: 1024, EnableChunkedPrefill: true, AsyncScheduling: true}
	s := newTestSched(t, cfg, V022, 200)
	var rs []*Request
	for i := range 10 {
		rs = append(rs, addReq(s, i, 5+7*i, 1+i%4))
	}
	steps := pipeline(t, s, 1000)
	rows := 0
	for _, st := range steps {
		for _, w := range st {
			rows++
			if r := rs[w.id]; w.computed+w.scheduled > r.NumPromptTokens+r.MaxTokens-1 {
				t.Errorf("request %d scheduled to %d tokens, past prompt + max_tokens - 1 = %d", w.id, w.computed+w.scheduled, r.NumPromptTokens+r.MaxTokens-1)
			}
		}
	}
	for _, r := range rs {
		if r.Status != Finished || r.NumOutputTokens != r.MaxTokens || r.NumOutputPlaceholders != 0 || r.Blocks.NumHeld() != 0 {
			t.Errorf("request %d: %v, %d of %d tokens, %d placeholders", r.ID, r.Status, r.NumOutputTokens, r.MaxTokens, r.NumOutputPlaceholders)
		}
	}
	if s.KV.Pool.NumHeld() != 0 {
		t.Errorf("%d blocks still held", s.KV.Pool.NumHeld())
	}
}

// Under speculative decoding the rejected drafts come off the scheduler's
// count a step late: with every draft rejected, the step scheduled while
// the previous one is in flight is counted K tokens ahead of the truth,
// and its row carries the runner's exact count (one more token per step).
func TestAsyncRejectedDraftsSubtractedAStepLate(t *testing.T) {
	const k = 2
	cfg := Config{MaxNumBatchedTokens: 64, MaxNumSeqs: 8, MaxModelLen: 1024, EnableChunkedPrefill: true, AsyncScheduling: true}
	s := newTestSched(t, cfg, V022, 64)
	s.Spec = Spec{Method: SpecNgram, K: k, Accept: Acceptance{Fixed: 0}}
	r := addReq(s, 0, 10, 6)
	var inFlight *Output
	for step := 0; step < 20 && (s.HasUnfinished() || inFlight != nil); step++ {
		out, err := s.Schedule(0)
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Rows) == 1 && step > 0 {
			row := out.Rows[0]
			if want := 10 + step - 1; row.NumComputed != want || row.NumScheduled != 1+k || row.NumDrafts != k {
				t.Errorf("step %d: row computed %d, %d scheduled, %d drafts; want %d, %d, %d", step, row.NumComputed, row.NumScheduled, row.NumDrafts, want, 1+k, k)
			}
			if step > 1 && r.NumComputedTokens != row.NumComputed+row.NumScheduled+k {
				t.Errorf("step %d: the scheduler counts %d computed, want the runner's %d + %d scheduled + %d rejected in flight", step, r.NumComputedTokens, row.NumComputed, row.NumScheduled, k)
			}
		}
		if inFlight != nil {
			if _, err := s.Update(inFlight, 0); err != nil {
				t.Fatal(err)
			}
		}
		inFlight = out
		if len(out.Rows) == 0 {
			inFlight = nil
		}
	}
	if r.Status != Finished || r.NumOutputTokens != 6 || r.NumOutputPlaceholders != 0 {
		t.Errorf("request: %v, %d tokens, %d placeholders; want finished, 6, 0", r.Status, r.NumOutputTokens, r.NumOutputPlaceholders)
	}
}
