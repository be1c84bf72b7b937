package engine_test

// Minimal breaks: for every invariant, a run that breaks that invariant
// alone, by the smallest margin there is (one token, one request, one
// block, one step), and the same run one unit short of breaking it, which
// must be clean. A check made one unit too lax misses the first; one made
// too strict flags the second; a check that leans on another invariant's
// witness is exposed because every other count must stay at 0.
//
// The breaks come from scenarios where a scenario can break the
// invariant (bug A's and bug B's mechanisms, checks.max_steps), and
// otherwise from user policies (sched.Policy) that break one rule once.
// time-monotonic cannot be broken by a scenario or a policy (the event
// loop owns time): check/invariant_break_test.go feeds its checker records.

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"statesim/engine"
	"statesim/invariant"
	"statesim/prop"
	"statesim/report"
	"statesim/scenarios"
	"statesim/sched"
	"statesim/statecache"
	"statesim/step"
)

// base is a small clean scenario on the tiny hybrid under the fixed
// version; each case changes what it needs.
func base(reqs ...prop.Request) *prop.Params {
	return &prop.Params{Requests: reqs, MaxNumSeqs: 4, MaxNumBatchedTokens: 8, ExtraBlocks: 8, StateIndexBits: 64, Seed: 1,
		Preset: "tiny-hybrid", Version: "fixed", Policy: "fcfs", ChunkedPrefill: true, Backend: "symbolic"}
}

func scenario(t *testing.T, p *prop.Params) *scenarios.Scenario {
	t.Helper()
	sc, err := prop.NewRunner(t.TempDir(), nil).Build(p, strings.ReplaceAll(t.Name(), "/", "-"))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// recorded is what a test keeps of one step record.
type recorded struct {
	Step      int64
	Tokens    int
	Running   int
	Rows      []step.Row
	Preempted []int64
}

// run runs sc with policy (nil: the version's own) and returns the report
// and every step as recorded. detail step.Reads records what the kernels
// read; it also settles the symbolic check's shortcuts before every
// access, so runs without it exercise them.
func run(t *testing.T, sc *scenarios.Scenario, policy sched.Policy, detail ...step.Detail) (*report.Report, []recorded) {
	t.Helper()
	var steps []recorded
	var d step.Detail
	for _, x := range detail {
		d |= x
	}
	rep, err := engine.Run(sc, engine.Options{Policy: policy, Detail: d, KeepAll: true, Observe: func(rec *step.Record) {
		r := recorded{Step: rec.Step, Tokens: rec.NumScheduledTokens, Running: rec.Running,
			Preempted: slices.Clone(rec.Preempted)}
		for _, row := range rec.Rows {
			row.StateBlocks = slices.Clone(row.StateBlocks)
			row.Reads = slices.Clone(row.Reads)
			r.Rows = append(r.Rows, row)
		}
		steps = append(steps, r)
	}})
	if err != nil {
		t.Fatal(err)
	}
	return rep, steps
}

// only requires inv counted exactly n times and every other invariant 0.
func only(t *testing.T, rep *report.Report, inv invariant.Invariant, n int64) {
	t.Helper()
	for _, other := range invariant.All() {
		want := int64(0)
		if other == inv {
			want = n
		}
		if got := rep.Count(other); got != want {
			t.Errorf("%s counted %d, want %d; violations: %v", other, got, want, rep.Violations)
		}
	}
}

func clean(t *testing.T, rep *report.Report) {
	t.Helper()
	if n := rep.TotalViolations(); n != 0 {
		t.Errorf("the control run has %d violations: %v", n, rep.Violations)
	}
	if rep.Finished != rep.Requests || rep.Requests == 0 {
		t.Errorf("the control run finished %d of %d requests", rep.Finished, rep.Requests)
	}
}

// overBudgetOnce schedules step `at` with a budget one token larger.
type overBudgetOnce struct{ at int64 }

func (overBudgetOnce) Name() string { return "over-budget-once" }
func (p overBudgetOnce) Schedule(st *sched.State, out *sched.Output) error {
	if out.Step == p.at {
		st.Cfg.MaxNumBatchedTokens++
		defer func() { st.Cfg.MaxNumBatchedTokens-- }()
	}
	return sched.V1Policy{}.Schedule(st, out)
}

// TestTokenBudgetBrokenByOneToken: a 9-token prompt under a budget of 8.
// V1 spends exactly the budget in step 0 (a check using ≥ would flag it);
// one token more, once, is one violation.
func TestTokenBudgetBrokenByOneToken(t *testing.T) {
	sc := scenario(t, base(prop.Request{Prompt: 9, Output: 2}))
	rep, steps := run(t, sc, nil)
	clean(t, rep)
	if steps[0].Tokens != sc.Engine.MaxNumBatchedTokens {
		t.Fatalf("the control's step 0 scheduled %d tokens, want exactly the budget %d", steps[0].Tokens, sc.Engine.MaxNumBatchedTokens)
	}
	rep, steps = run(t, sc, overBudgetOnce{at: 0})
	only(t, rep, invariant.TokenBudget, 1)
	if steps[0].Tokens != sc.Engine.MaxNumBatchedTokens+1 {
		t.Fatalf("step 0 scheduled %d tokens, want budget + 1", steps[0].Tokens)
	}
}

// oneTooMany puts the head of the waiting queue in the running list for
// step `at` without scheduling it (no row, no blocks), and puts it back
// before the next step: one request over max_num_seqs while the step's
// rows stay within it.
type oneTooMany struct {
	at   int64
	held *sched.Request
}

func (*oneTooMany) Name() string { return "one-too-many" }
func (p *oneTooMany) Schedule(st *sched.State, out *sched.Output) error {
	if r := p.held; r != nil {
		p.held = nil
		st.Running = slices.DeleteFunc(st.Running, func(x *sched.Request) bool { return x == r })
		r.Status = sched.Waiting
		st.Waiting = append([]*sched.Request{r}, st.Waiting...)
	}
	if err := (sched.V1Policy{}).Schedule(st, out); err != nil {
		return err
	}
	if out.Step == p.at && len(st.Waiting) > 0 {
		r := st.PopWaiting()
		r.Status = sched.Running
		st.Running = append(st.Running, r)
		p.held = r
	}
	return nil
}

// TestMaxNumSeqsBrokenByOneRequest: max_num_seqs 1 and two requests. V1
// runs exactly one at a time (the limit, not over it); one more request
// in the running list for one step is one violation, though that step
// schedules a single row: the check counts running requests, not rows.
func TestMaxNumSeqsBrokenByOneRequest(t *testing.T) {
	p := base(prop.Request{Prompt: 4, Output: 3}, prop.Request{Prompt: 4, Output: 3})
	p.MaxNumSeqs = 1
	sc := scenario(t, p)
	rep, steps := run(t, sc, nil)
	clean(t, rep)
	if steps[1].Running != 1 {
		t.Fatalf("the control's step 1 runs %d requests, want max_num_seqs (1)", steps[1].Running)
	}
	rep, steps = run(t, sc, &oneTooMany{at: 1})
	only(t, rep, invariant.MaxNumSeqs, 1)
	if steps[1].Running != 2 || len(steps[1].Rows) != 1 {
		t.Fatalf("step 1 runs %d requests in %d rows, want 2 in 1", steps[1].Running, len(steps[1].Rows))
	}
}

// nobody holds the blocks a test takes for no request.
const nobody statecache.RequestID = 1 << 40

// holdBlock takes one block for nobody while scheduling step `at` and
// returns it while scheduling the next: the pool holds one block more
// than the running requests' tables for exactly one step.
type holdBlock struct {
	at   int64
	held int32
}

func (*holdBlock) Name() string { return "hold-block" }
func (p *holdBlock) Schedule(st *sched.State, out *sched.Output) error {
	if p.held != 0 {
		if err := st.KV.Pool.Push(nobody, p.held); err != nil {
			return err
		}
		p.held = 0
	}
	if err := (sched.V1Policy{}).Schedule(st, out); err != nil {
		return err
	}
	if out.Step == p.at {
		b, err := st.KV.Pool.Pop(nobody)
		p.held = b
		return err
	}
	return nil
}

// lendBlock returns the last attention block of the first scheduled
// row's request to the free queue while scheduling step `at`, leaving it
// in the request's table, and takes it back while scheduling the next:
// the tables hold one block more than the pool for exactly one step.
type lendBlock struct {
	at    int64
	req   *sched.Request
	block int32
}

func (*lendBlock) Name() string { return "lend-block" }
func (p *lendBlock) Schedule(st *sched.State, out *sched.Output) error {
	if p.req != nil {
		// Pop until the lent block comes back, returning the others to
		// the tail (the free queue rotates; no block changes hands).
		for {
			b, err := st.KV.Pool.Pop(p.req.ID)
			if err != nil {
				return err
			}
			if b == p.block {
				break
			}
			if err := st.KV.Pool.Push(p.req.ID, b); err != nil {
				return err
			}
		}
		p.req = nil
	}
	if err := (sched.V1Policy{}).Schedule(st, out); err != nil {
		return err
	}
	if out.Step == p.at && len(out.Rows) > 0 {
		r := out.Rows[0].Req
		attn := r.Blocks.Attn[0]
		p.req, p.block = r, attn[len(attn)-1]
		return st.KV.Pool.Push(r.ID, p.block)
	}
	return nil
}

// TestBlockConservationBrokenByOneBlockForOneStep: a block the pool holds
// for nobody during one step, then returns, and a block still in a
// running request's table that the pool holds free during one step, are
// one violation each: the check catches both directions, and nothing is
// left over at the end of the run.
func TestBlockConservationBrokenByOneBlockForOneStep(t *testing.T) {
	sc := scenario(t, base(prop.Request{Prompt: 6, Output: 6}, prop.Request{GapUS: 1, Prompt: 5, Output: 4}))
	rep, _ := run(t, sc, nil)
	clean(t, rep)
	for _, pol := range []sched.Policy{&holdBlock{at: 2}, &lendBlock{at: 2}} {
		t.Run(pol.Name(), func(t *testing.T) {
			rep, _ := run(t, sc, pol)
			only(t, rep, invariant.BlockConservation, 1)
			if vs := rep.Violations; len(vs) != 1 || vs[0].Step != 2 {
				t.Errorf("want one violation at step 2, got %v", vs)
			}
		})
	}
}

// leakLast takes one block for nobody in every step and never returns
// it. In a run of one step, the step's check sees it, and so does the end
// of the run, where no request holds anything.
type leakLast struct{}

func (leakLast) Name() string { return "leak-last" }
func (leakLast) Schedule(st *sched.State, out *sched.Output) error {
	if err := (sched.V1Policy{}).Schedule(st, out); err != nil {
		return err
	}
	_, err := st.KV.Pool.Pop(nobody)
	return err
}

// TestBlockConservationSeesALeakAtTheEnd: one request finishing in one
// step and one block never returned: the step's check and the end of the
// run's each count it once.
func TestBlockConservationSeesALeakAtTheEnd(t *testing.T) {
	sc := scenario(t, base(prop.Request{Prompt: 4, Output: 1}))
	rep, steps := run(t, sc, leakLast{})
	if len(steps) != 1 {
		t.Fatalf("%d steps, want 1", len(steps))
	}
	only(t, rep, invariant.BlockConservation, 2)
	ends := 0
	for _, v := range rep.Violations {
		if strings.Contains(v.Detail, "after every request finished") {
			ends++
		}
	}
	if ends != 1 {
		t.Errorf("the end of the run counted %d leaks, want 1: %v", ends, rep.Violations)
	}
}

// refuse never admits one request: it stays waiting, with nothing else
// to run once the others finish.
type refuse struct{ id statecache.RequestID }

func (refuse) Name() string { return "refuse" }
func (p refuse) Schedule(st *sched.State, out *sched.Output) error {
	var held *sched.Request
	if len(st.Waiting) > 0 && st.Waiting[0].ID == p.id {
		held = st.PopWaiting()
	}
	err := sched.V1Policy{}.Schedule(st, out)
	if held != nil {
		st.Waiting = append([]*sched.Request{held}, st.Waiting...)
	}
	return err
}

// TestLivenessBrokenByOneRequest: the last request arrives, is never
// admitted, and the engine stalls with every arrival delivered: one
// liveness violation (a check that fires only while arrivals are pending
// misses it).
func TestLivenessBrokenByOneRequest(t *testing.T) {
	sc := scenario(t, base(prop.Request{Prompt: 4, Output: 3}, prop.Request{GapUS: 10, Prompt: 4, Output: 3}))
	rep, _ := run(t, sc, refuse{id: 1})
	only(t, rep, invariant.Liveness, 1)
	if rep.Finished != 1 || rep.Requests != 2 {
		t.Fatalf("%d of %d requests finished, want 1 of 2", rep.Finished, rep.Requests)
	}
	if v := rep.Violations[0]; v.RequestID != 1 || !strings.Contains(v.Detail, "1 waiting") {
		t.Errorf("the violation should name request 1, waiting: %v", v)
	}
}

// TestLivenessBrokenByOneStep: a run that needs N steps is clean under
// checks.max_steps N and one liveness violation under N − 1.
func TestLivenessBrokenByOneStep(t *testing.T) {
	sc := scenario(t, base(prop.Request{Prompt: 12, Output: 3}, prop.Request{GapUS: 5, Prompt: 3, Output: 4}))
	rep, steps := run(t, sc, nil)
	clean(t, rep)
	n := int64(len(steps))
	sc.Checks.MaxSteps = n
	rep, _ = run(t, sc, nil)
	clean(t, rep)
	sc.Checks.MaxSteps = n - 1
	rep, _ = run(t, sc, nil)
	only(t, rep, invariant.Liveness, 1)
	if !strings.Contains(rep.Violations[0].Detail, fmt.Sprintf("checks.max_steps (%d) reached", n-1)) {
		t.Errorf("the violation does not name max_steps: %v", rep.Violations[0])
	}
}

// TestDecodeBeforePrefillBrokenByOneRow: v0.13 with a budget of 1 gives a
// new 2-token request 1 token and sends it to the Mamba decode kernel:
// one violation, and no stale read, since its slot is fresh (zeros are
// the right initial state). The fixed version runs it clean.
func TestDecodeBeforePrefillBrokenByOneRow(t *testing.T) {
	p := base(prop.Request{Prompt: 2, Output: 1})
	p.MaxNumBatchedTokens = 1
	rep, _ := run(t, scenario(t, p), nil)
	clean(t, rep)
	p.Version = "v0.13"
	rep, steps := run(t, scenario(t, p), nil)
	only(t, rep, invariant.NoDecodeBeforePrefill, 1)
	if r := steps[0].Rows[0]; r.NumComputed != 0 || r.NumScheduled != 1 || r.Path != sched.PathDecode {
		t.Fatalf("step 0's row: %+v, want a new 1-token row on the decode path", r)
	}
}

// prefixHit claims the first `hit` tokens of every request as already
// computed when it is first admitted, as a prefix-cache hit would, though
// nothing computed them: its state slot holds no state of those tokens.
type prefixHit struct{ hit int }

func (prefixHit) Name() string { return "prefix-hit" }
func (p prefixHit) Schedule(st *sched.State, out *sched.Output) error {
	for _, r := range st.Waiting {
		if r.NumPreemptions == 0 && r.NumComputedTokens == 0 && r.Blocks.Covered() == 0 {
			r.NumComputedTokens = p.hit
		}
	}
	return sched.V1Policy{}.Schedule(st, out)
}

// TestStaleReadBrokenByOneTokenAndTainted: on a Mamba-only model, one
// request whose first token is claimed by a false prefix hit starts its
// prefill with has_initial_state from a slot that holds zeros, not its
// state after 1 token: one stale read, and no decode before prefill (it
// takes the prefill path). The state it writes is tainted: the request
// is corrupt from that step on (CorruptStep) and its later reads see its
// own state marked tainted. A hit of 0 tokens is clean.
func TestStaleReadBrokenByOneTokenAndTainted(t *testing.T) {
	p := base(prop.Request{Prompt: 5, Output: 4})
	p.Preset = "mamba-only-3b"
	sc := scenario(t, p)
	rep, _ := run(t, sc, prefixHit{hit: 0})
	clean(t, rep)
	rep, steps := run(t, sc, prefixHit{hit: 1}, step.Reads)
	only(t, rep, invariant.StaleSlotRead, 1)
	first := steps[0].Rows[0]
	if first.NumComputed != 1 || first.Path != sched.PathPrefill || !first.HasInitialState {
		t.Fatalf("step 0's row %+v: want a prefill with has_initial_state after 1 claimed token", first)
	}
	for _, s := range steps {
		for _, r := range s.Rows {
			if r.CorruptStep != 0 {
				t.Errorf("step %d: CorruptStep %d, want 0 (the stale read's step) on every row", s.Step, r.CorruptStep)
			}
			if s.Step == 0 {
				continue
			}
			for _, rd := range r.Reads {
				if !strings.Contains(rd.Describe(), "tainted") {
					t.Errorf("step %d: slot %d holds %q: the state written from a stale read must be tainted", s.Step, rd.Block, rd.Describe())
				}
			}
		}
	}
	if len(steps) < 2 || len(steps[1].Rows[0].Reads) == 0 {
		t.Fatal("no later step read the request's state: the taint went unchecked")
	}
}

// TestWrongAddressWriteBrokenByOneBlock: with a 16-bit prefill state
// index on the tiny hybrid (stride 1024 elements), slot 64 is the first
// whose address wraps. A request takes its three state slots from the
// head of the free queue, then its attention blocks (vLLM's group order,
// Mamba groups first). A first request of 58 attention blocks takes
// blocks 1..61 and finishes; the second, arriving after, gets slots
// 62..64: one wrapped write, into the null block, which nobody reads. It
// finishes in that step, so its stale slot is never read either. One
// attention block less puts its slots at 61..63: clean.
func TestWrongAddressWriteBrokenByOneBlock(t *testing.T) {
	for _, c := range []struct {
		blocks   int
		lastSlot int32
		wraps    int64
	}{{57, 63, 0}, {58, 64, 1}} {
		prompt := c.blocks * 32
		p := base(prop.Request{Prompt: prompt, Output: 1}, prop.Request{GapUS: 10_000_000, Prompt: 4, Output: 1})
		p.StateIndexBits = 16
		p.MaxNumBatchedTokens = prompt
		rep, steps := run(t, scenario(t, p), nil)
		last := steps[len(steps)-1].Rows[0]
		if got := last.StateBlocks; last.RequestID != 1 || got[len(got)-1] != c.lastSlot {
			t.Fatalf("%d-token first prompt: request %d's state slots %v, want request 1's last at %d", prompt, last.RequestID, got, c.lastSlot)
		}
		if c.wraps == 0 {
			clean(t, rep)
			continue
		}
		only(t, rep, invariant.WrongAddressWrite, c.wraps)
		if rep.Cache.FirstWrappingSlot != 64 {
			t.Errorf("first wrapping slot %d, want 64", rep.Cache.FirstWrappingSlot)
		}
	}
}

// demote raises the priority value of the first running request (the
// one scheduled first) before every step, so that under the priority
// policy it is the preemption victim even when it was already scheduled
// in the step that preempts it.
type demote struct{}

func (demote) Name() string { return "demote" }
func (demote) Schedule(st *sched.State, out *sched.Output) error {
	if len(st.Running) > 0 {
		st.Running[0].Priority = 1
	}
	return sched.V1Policy{}.Schedule(st, out)
}

// TestPriorityVictimBudgetIsRefunded: under the priority policy a victim
// already scheduled in the step is un-scheduled, and its tokens go back
// to the budget for the rows after it. The scenario: request 0 decodes
// first (and is demoted, so it is the victim), request 1's decode needs a
// new block from an empty pool, and request 2 is a long prompt whose
// chunk takes whatever budget is left. With the refund the step spends
// the whole budget; without it, one token less.
func TestPriorityVictimBudgetIsRefunded(t *testing.T) {
	p := base(prop.Request{Prompt: 20, Output: 30}, prop.Request{GapUS: 1, Prompt: 32, Output: 30}, prop.Request{GapUS: 1, Prompt: 200, Output: 1})
	p.Policy = "priority"
	p.MaxNumBatchedTokens = 64
	sc := scenario(t, p)
	// Step 0 runs request 0's prompt alone; step 1 its first decode,
	// request 1's whole prompt (32 tokens, one attention block of 32) and
	// request 2's first 31. The pool holds exactly those: 3 state slots
	// and one attention block each. In step 2 request 1's 33rd token
	// needs a block the pool does not have.
	sc.Engine.NumGPUBlocksOverride = 1 + 3*4
	rep, steps := run(t, sc, demote{})
	found := false
	for _, s := range steps {
		ids := map[int64]int{}
		for _, r := range s.Rows {
			ids[r.RequestID] = r.NumScheduled
		}
		_, has0 := ids[0]
		_, has1 := ids[1]
		n2, has2 := ids[2]
		if !slices.Contains(s.Preempted, 0) || has0 || !has1 || !has2 {
			continue
		}
		found = true
		if s.Tokens != sc.Engine.MaxNumBatchedTokens {
			t.Errorf("step %d: request 0 un-scheduled, request 1 given %d and request 2 %d tokens: %d in all, want the whole budget %d",
				s.Step, ids[1], n2, s.Tokens, sc.Engine.MaxNumBatchedTokens)
		}
	}
	if !found {
		for _, s := range steps[:min(len(steps), 8)] {
			t.Logf("step %d: %d tokens, preempted %v, rows %v", s.Step, s.Tokens, s.Preempted, s.Rows)
		}
		t.Fatal("no step un-scheduled request 0 for request 1 with request 2 after them: the scenario no longer reaches the refund")
	}
	if rep.TotalViolations() != 0 {
		t.Errorf("violations: %v", rep.Violations)
	}
}

// rewind moves one running request's num_computed_tokens back by one
// token before step `at`, as a scheduler that lost count of an accepted
// token would: the request recomputes that token from a slot holding its
// state after one token more.
type rewind struct{ at int64 }

func (rewind) Name() string { return "rewind" }
func (p rewind) Schedule(st *sched.State, out *sched.Output) error {
	if out.Step == p.at && len(st.Running) > 0 && st.Running[0].NumComputedTokens > 1 {
		st.Running[0].NumComputedTokens--
	}
	return sched.V1Policy{}.Schedule(st, out)
}

// TestStaleReadOfOwnStateOneTokenAhead: the state-validity rule counts
// tokens, not only the writer: a request reading its own state, written
// after one token more than it now has computed, is one stale read, and
// nothing else breaks (its attention rewrites the position it
// recomputes). With a budget of 8 the row recomputes 2 tokens on the
// prefill path from has_initial_state; with a budget of 1 it takes 1
// token on the decode kernel, where the check's shortcut for a request's
// own slots must count tokens too.
func TestStaleReadOfOwnStateOneTokenAhead(t *testing.T) {
	for _, c := range []struct {
		budget, q int
		path      sched.Path
	}{{8, 2, sched.PathPrefill}, {1, 1, sched.PathDecode}} {
		p := base(prop.Request{Prompt: 4, Output: 6})
		p.MaxNumBatchedTokens = c.budget
		sc := scenario(t, p)
		rep, _ := run(t, sc, rewind{at: 99})
		clean(t, rep)
		rep, steps := run(t, sc, rewind{at: 2})
		only(t, rep, invariant.StaleSlotRead, 1)
		if r := steps[2].Rows[0]; r.NumScheduled != c.q || r.Path != c.path || !r.HasInitialState || r.CorruptStep != 2 {
			t.Errorf("budget %d: step 2's row %+v: want %d tokens on the %s path from the slot's state, corrupt from step 2", c.budget, r, c.q, c.path)
		}
	}
}

// minimalBreaks names each invariant's minimal break in this file (and
// check/invariant_break_test.go): a new invariant needs one.
var minimalBreaks = map[invariant.Invariant]string{
	invariant.NoDecodeBeforePrefill: "TestDecodeBeforePrefillBrokenByOneRow",
	invariant.StaleSlotRead:         "TestStaleReadBrokenByOneTokenAndTainted, TestStaleReadOfOwnStateOneTokenAhead",
	invariant.WrongAddressWrite:     "TestWrongAddressWriteBrokenByOneBlock",
	invariant.TokenBudget:           "TestTokenBudgetBrokenByOneToken",
	invariant.MaxNumSeqs:            "TestMaxNumSeqsBrokenByOneRequest",
	invariant.BlockConservation:     "TestBlockConservationBrokenByOneBlockForOneStep, TestBlockConservationSeesALeakAtTheEnd",
	invariant.Liveness:              "TestLivenessBrokenByOneRequest, TestLivenessBrokenByOneStep",
	invariant.TimeMonotonic:         "check.TestTimeMonotonicBrokenByOneNanosecond",
}

func TestEveryInvariantHasAMinimalBreak(t *testing.T) {
	for _, inv := range invariant.All() {
		if minimalBreaks[inv] == "" {
			t.Errorf("invariant %s has no minimal breaking test: add one (a scenario, a policy or an injected fault that breaks it alone, by one unit)", inv)
		}
	}
}
