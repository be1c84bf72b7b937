package prop_test

// An example of a user scheduling policy, written in Go and checked with
// the same properties as vLLM's own. Copy this file to start your own (it
// uses only the public API): a policy is any sched.Policy, handed to
// engine.Run in Options.Policy, or to a prop.Runner's Policy field for
// the property search; the scenario's vllm_version still decides how the
// batch is classified.

import (
	"os"
	"strconv"
	"testing"

	"statesim/engine"
	"statesim/internal/runtest"
	"statesim/internal/testtier"
	"statesim/prop"
	"statesim/sched"
)

// reserveBudget is vLLM V1's scheduling with a minimum first chunk: a
// request with no computed tokens (new, or recomputing after preemption)
// is never scheduled with a single token while it has more. That single
// token is the exact trigger of bug A (the row looks like a decode), so
// this is a scheduler-side workaround for vLLM ≤ 0.14.
//
// It works by composition: run V1, then fix up each such row, last first:
// top it up to 2 tokens when the step's budget has room and the blocks
// allocate, otherwise undo its admission (it waits one more step). Rows
// with 0 computed tokens are always this step's admissions: a running
// request has computed at least one token. It needs
// max_num_batched_tokens ≥ 2; with a budget of 1 every admission would be
// undone forever (TestReserveBudgetStarvesAtBudgetOne finds that).
type reserveBudget struct{}

func (reserveBudget) Name() string { return "reserve-budget" }

func (reserveBudget) Schedule(st *sched.State, out *sched.Output) error {
	if err := (sched.V1Policy{}).Schedule(st, out); err != nil {
		return err
	}
	for i := len(out.Rows) - 1; i >= 0; i-- {
		row := &out.Rows[i]
		if row.NumComputed != 0 || row.NumScheduled != 1 || row.Req.NumTokens() < 2 {
			continue
		}
		if out.NumScheduledTokens < st.Cfg.MaxNumBatchedTokens {
			ok, err := st.Allocate(row.Req, 2)
			if err != nil {
				return err
			}
			if ok {
				row.NumScheduled++
				out.NumScheduledTokens++
				continue
			}
		}
		if err := unadmit(st, out, i); err != nil {
			return err
		}
	}
	return nil
}

// unadmit reverses V1's admission of row i: the request leaves the
// running list, gives its blocks back, and returns to the head of the
// waiting queue, where V1 took it from (undoing last rows first keeps
// the queue's order).
func unadmit(st *sched.State, out *sched.Output, i int) error {
	r := out.Rows[i].Req
	for k, x := range st.Running {
		if x == r {
			st.Running = append(st.Running[:k], st.Running[k+1:]...)
			break
		}
	}
	if err := st.KV.Free(r.ID, &r.Blocks); err != nil {
		return err
	}
	r.Status = sched.Waiting
	st.Waiting = append([]*sched.Request{r}, st.Waiting...)
	out.NumScheduledTokens -= out.Rows[i].NumScheduled
	out.Rows = append(out.Rows[:i], out.Rows[i+1:]...)
	return nil
}

// lastRowVeto was this file's first draft: it only undid the last row,
// reasoning that only the last admission can have its chunk cut to one
// token by the budget. The property search proved it wrong within a
// second: long_prefill_token_threshold 1 cuts every admission to one
// token. It stays as a test that the search catches such a policy.
type lastRowVeto struct{}

func (lastRowVeto) Name() string { return "last-row-veto" }

func (lastRowVeto) Schedule(st *sched.State, out *sched.Output) error {
	if err := (sched.V1Policy{}).Schedule(st, out); err != nil {
		return err
	}
	if n := len(out.Rows); n > 0 && out.Rows[n-1].NumComputed == 0 && out.Rows[n-1].NumScheduled == 1 && out.Rows[n-1].Req.NumTokens() > 1 {
		return unadmit(st, out, n-1)
	}
	return nil
}

// policyRunner is a property runner with policy plugged in. Searches
// through one runner share its runs: properties checked over the same
// scenarios judge one run of each.
func policyRunner(t *testing.T, policy sched.Policy) *prop.Runner {
	t.Helper()
	dir, err := prop.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	r := prop.NewRunner(dir, nil)
	r.Policy = policy
	return r
}

// searchWithPolicy runs the property search for one named property with
// policy plugged in, over scenarios drawn from c, from seed 1 or
// $STATESIM_SEED.
func searchWithPolicy(t *testing.T, policy sched.Policy, c prop.Config, name string, trials int) prop.Result {
	t.Helper()
	return searchOn(t, policyRunner(t, policy), c, name, trials)
}

// searchOn is searchWithPolicy on a given runner.
func searchOn(t *testing.T, r *prop.Runner, c prop.Config, name string, trials int) prop.Result {
	t.Helper()
	seed := int64(1)
	if v := os.Getenv("STATESIM_SEED"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("STATESIM_SEED=%q: %v", v, err)
		}
		seed = n
	}
	ps, err := prop.ByName([]string{name})
	if err != nil {
		t.Fatal(err)
	}
	res, err := prop.Check(r, c, ps[0], prop.Options{Seed: seed, Trials: trials})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestSearchCatchesLastRowVeto: the search must find the draft's hole.
func TestSearchCatchesLastRowVeto(t *testing.T) {
	c := prop.BugA("v0.13")
	c.MinBudget = 2
	res := searchWithPolicy(t, lastRowVeto{}, c, "no-decode-before-prefill", 2000)
	if res.Holds {
		t.Fatalf("last-row-veto held over %d v0.13 scenarios", res.Trials)
	}
	t.Logf("%s\n%v", res.Shrunk, res.Err)
}

// TestReserveBudgetStopsTheImposter: the seeds' incident under v0.13 has
// its imposter with V1's policy and none with reserve-budget.
func TestReserveBudgetStopsTheImposter(t *testing.T) {
	base := runtest.Run(t, "imposter", engine.Options{})
	if len(base.Imposters) == 0 {
		t.Fatal("the imposter scenario has no imposter under V1: the comparison below proves nothing")
	}
	rep := runtest.Run(t, "imposter", engine.Options{Policy: reserveBudget{}})
	if n := rep.TotalViolations(); n > 0 || len(rep.Imposters) > 0 {
		t.Fatalf("reserve-budget: %d violations, %d imposters: %v", n, len(rep.Imposters), rep.Violations)
	}
	if rep.Finished != rep.Requests {
		t.Fatalf("reserve-budget finished %d of %d requests", rep.Finished, rep.Requests)
	}
}

// TestReserveBudgetHoldsEveryProperty searches v0.13 and v0.14 scenarios
// (budget ≥ 2) with the policy plugged in: every property must hold,
// the numeric backend's log-probs included.
func TestReserveBudgetHoldsEveryProperty(t *testing.T) {
	t.Parallel() // an independent search or replay: the suite's longest, run beside the rest
	// One runner: each scenario runs once, judged by every property.
	r := policyRunner(t, reserveBudget{})
	for _, v := range []string{"v0.13", "v0.14"} {
		c := prop.BugA(v)
		c.MinBudget = 2
		for _, p := range prop.All() {
			trials := testtier.Sized(250, 500)
			switch p.Name {
			case "logprobs-match-reference":
				trials = testtier.Sized(20, 60) // numeric runs: the mock recomputes every request
			case "determinism":
				trials = testtier.Sized(50, 500) // two fresh runs each, uncached, as in TestPropertiesHoldWhenFixed
			}
			res := searchOn(t, r, c, p.Name, trials)
			if res.Unavailable {
				t.Logf("%s: %v", p.Name, res.Err)
			} else if !res.Holds {
				t.Errorf("reserve-budget under %s breaks %s (seed %d): %v\nshrunk: %s", v, p.Name, res.Seed, res.Err, res.Shrunk)
			}
		}
	}
}

// TestReserveBudgetStarvesAtBudgetOne: the liveness property must catch
// the policy's documented limit.
func TestReserveBudgetStarvesAtBudgetOne(t *testing.T) {
	c := prop.BugA("v0.13")
	c.MaxBudget = 1
	res := searchWithPolicy(t, reserveBudget{}, c, "liveness", 200)
	if res.Holds {
		t.Fatal("reserve-budget with max_num_batched_tokens 1 passed liveness; it vetoes every admission")
	}
	if n := len(res.Shrunk.Requests); n != 1 {
		t.Errorf("starvation needs one request, shrunk to %d: %s", n, res.Shrunk)
	}
	t.Logf("%v", res.Err)
}
