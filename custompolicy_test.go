package statesim_test

// An example of a user scheduling policy, written in Go and checked with
// the same properties as vLLM's own. Copy this file to start your own:
// a policy is any sched.Policy, handed to statesim.Run in Options.Policy
// (or to a prop.Runner's Policy field for the property search); the
// scenario's vllm_version still decides how the batch is classified.

import (
	"testing"

	"statesim"
	"statesim/prop"
	"statesim/scenarios"
	"statesim/sched"
)

// reserveBudget is vLLM V1's scheduling with one veto: a request with no
// computed tokens is never admitted with a single token while its prompt
// is longer. That is the exact trigger of bug A (the new row looks like a
// decode), so this is a scheduler-side workaround for vLLM ≤ 0.14 that
// costs at most one step of latency for the vetoed request.
//
// It works by composition: run V1, then undo the last admission if it
// is the bad one. Only the last row can be: the budget runs down to 1
// only on the final waiting request V1 admits. It needs
// max_num_batched_tokens ≥ 2; with a budget of 1 every new request would
// be vetoed forever (TestReserveBudgetStarvesAtBudgetOne finds that).
type reserveBudget struct{}

func (reserveBudget) Name() string { return "reserve-budget" }

func (reserveBudget) Schedule(st *sched.State, out *sched.Output) error {
	if err := (sched.V1{}).Schedule(st, out); err != nil {
		return err
	}
	n := len(out.Rows)
	if n == 0 {
		return nil
	}
	row := out.Rows[n-1]
	r := row.Req
	if row.NumComputed != 0 || row.NumScheduled != 1 || r.NumTokens() <= 1 {
		return nil
	}
	// V1 popped r from the head of the waiting queue and appended it to
	// the running list: put it back where it was, and give its blocks back.
	if st.Running[len(st.Running)-1] != r {
		return nil // not an admission this step; leave it to V1
	}
	st.Running = st.Running[:len(st.Running)-1]
	if err := st.KV.Free(r.ID, &r.Blocks); err != nil {
		return err
	}
	r.Status = sched.Waiting
	st.Waiting = append([]*sched.Request{r}, st.Waiting...)
	out.Rows = out.Rows[:n-1]
	out.NumScheduledTokens--
	return nil
}

// TestReserveBudgetStopsTheImposter: the seeds' incident under v0.13 has
// its imposter with V1's policy and none with reserve-budget.
func TestReserveBudgetStopsTheImposter(t *testing.T) {
	sc, err := scenarios.Load("imposter", nil)
	if err != nil {
		t.Fatal(err)
	}
	base, err := statesim.Run(sc, statesim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(base.Imposters) == 0 {
		t.Fatal("the imposter scenario has no imposter under V1: the comparison below proves nothing")
	}
	rep, err := statesim.Run(sc, statesim.Options{Policy: reserveBudget{}})
	if err != nil {
		t.Fatal(err)
	}
	if n := rep.TotalViolations(); n > 0 || len(rep.Imposters) > 0 {
		t.Fatalf("reserve-budget: %d violations, %d imposters: %v", n, len(rep.Imposters), rep.Violations)
	}
	if rep.Finished != rep.Requests {
		t.Fatalf("reserve-budget finished %d of %d requests", rep.Finished, rep.Requests)
	}
}

// TestReserveBudgetHoldsEveryProperty searches v0.13 and v0.14 scenarios
// (budget ≥ 2) with the policy plugged in: every property must hold.
func TestReserveBudgetHoldsEveryProperty(t *testing.T) {
	seed := searchSeed(t)
	r := newRunner(t)
	r.Policy = reserveBudget{}
	for _, v := range []string{"v0.13", "v0.14"} {
		c := prop.BugA(v)
		c.MinBudget = 2
		for _, p := range prop.All() {
			if p.Name == "logprobs-match-reference" {
				continue
			}
			res := search(t, r, c, p, seed, 500)
			if !res.Holds {
				t.Errorf("reserve-budget under %s breaks %s:\n%s", v, p.Name, explain(t, r, res))
			}
		}
	}
}

// TestReserveBudgetStarvesAtBudgetOne: the liveness property must catch
// the policy's documented limit.
func TestReserveBudgetStarvesAtBudgetOne(t *testing.T) {
	r := newRunner(t)
	r.Policy = reserveBudget{}
	c := prop.BugA("v0.13")
	c.MaxBudget = 1
	res := search(t, r, c, property(t, "liveness"), searchSeed(t), 200)
	if res.Holds {
		t.Fatal("reserve-budget with max_num_batched_tokens 1 passed liveness; it vetoes every admission")
	}
	if n := len(res.Shrunk.Requests); n != 1 {
		t.Errorf("starvation needs one request, shrunk to %d: %s", n, res.Shrunk)
	}
	t.Logf("%v", res.Err)
}
