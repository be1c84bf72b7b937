// Property tests: the search in package prop must find bug A, its v0.14
// residue and bug B on its own, shrink each to a small scenario that
// replays from YAML, and find nothing in the fixed version.
//
// This file is package prop_test, not prop: it runs prop's searches from
// outside, as statesim check does.
package prop_test

import (
	"flag"
	"os"
	"slices"
	"statesim/step"
	"strconv"
	"strings"
	"testing"

	_ "statesim/backend/mock" // backend kind "mock"
	"statesim/engine"
	"statesim/internal/runtest"
	"statesim/internal/testtier"
	"statesim/invariant"
	"statesim/prop"
	"statesim/report"
	"statesim/sched"
)

var seedFlag = flag.Int64("statesim.seed", 0, "seed for the property searches (default: $STATESIM_SEED, else 1)")

// searchSeed is the seed every property search starts from: the
// -statesim.seed flag, else $STATESIM_SEED, else 1, so `go test` is
// reproducible and a failure is replayed with the seed it prints.
func searchSeed(t testing.TB) int64 {
	if *seedFlag != 0 {
		return *seedFlag
	}
	if s := os.Getenv("STATESIM_SEED"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("STATESIM_SEED=%q: %v", s, err)
		}
		return n
	}
	return 1
}

func newRunner(t testing.TB) *prop.Runner {
	dir, err := prop.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return prop.NewRunner(dir, nil)
}

func property(t testing.TB, name string) prop.Property {
	ps, err := prop.ByName([]string{name})
	if err != nil {
		t.Fatal(err)
	}
	return ps[0]
}

// search runs one property search and fails the test on a driver error.
func search(t testing.TB, r *prop.Runner, c prop.Config, p prop.Property, seed int64, trials int) prop.Result {
	t.Helper()
	res, err := prop.Check(r, c, p, prop.Options{Seed: seed, Trials: trials})
	if err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	return res
}

// explain writes the counterexample as a scenario and returns what a
// failure message needs: seed, failure, YAML, and the replay command.
func explain(t testing.TB, r *prop.Runner, res prop.Result) string {
	dir := t.TempDir()
	w, err := prop.Write(r, res, dir, "counterexample", "go test -run "+t.Name()+" -statesim.seed "+strconv.FormatInt(res.Seed, 10))
	if err != nil {
		return err.Error()
	}
	y, _ := os.ReadFile(w.YAML)
	return "seed " + strconv.FormatInt(res.Seed, 10) + ": " + res.Err.Error() + "\nshrunk: " + res.Shrunk.String() +
		"\n" + string(y) + "replay: statesim run " + w.YAML
}

// replay writes the shrunk counterexample to YAML + JSONL, loads it back
// the way `statesim run` does and runs it: the result must violate the
// same invariants as the in-memory run.
func replay(t *testing.T, r *prop.Runner, res prop.Result) *report.Report {
	t.Helper()
	w, err := prop.Write(r, res, t.TempDir(), "shrunk", "")
	if err != nil {
		t.Fatal(err)
	}
	rep := runtest.Run(t, w.YAML, engine.Options{})
	if got := violatedNames(rep); strings.Join(got, " ") != strings.Join(w.Expect, " ") {
		t.Fatalf("replayed from YAML the counterexample violates %v, in memory %v", got, w.Expect)
	}
	return rep
}

func violatedNames(rep *report.Report) []string {
	var out []string
	for _, ic := range rep.Invariants {
		if ic.Count > 0 {
			out = append(out, ic.Name)
		}
	}
	if len(out) == 0 {
		return []string{"clean"}
	}
	return out
}

// incidentShape narrows the bug A search to the incident's conditions: a
// budget of at least 2 and no long_prefill_token_threshold, so a new
// request is cut to one token only by other rows spending the budget.
func incidentShape(version string) prop.Config {
	c := prop.BugA(version)
	c.MinBudget = 2
	c.MaxLongPrefill = 0
	return c
}

// numericBugA is the bug A search for the numeric property: v0.13 with
// a budget of 1, so that every new request is given one token, the
// imposter's trigger. The full BugA search shrinks to this very shape
// (seed 1: 2 requests, budget 1) but draws 116 scenarios first, each a
// full recomputation on the mock and the float64 reference; here the
// first draws break it.
func numericBugA() prop.Config {
	c := prop.BugA("v0.13")
	c.MaxBudget = 1
	return c
}

// TestPropertiesHoldWhenFixed: with the fixed split, a 64-bit index and
// V0 as the control, no generated scenario over any preset breaks any
// property.
func TestPropertiesHoldWhenFixed(t *testing.T) {
	t.Parallel() // an independent search or replay: the suite's longest, run beside the rest
	seed := searchSeed(t)
	r := newRunner(t)
	for _, v := range []string{"fixed", "v0"} {
		c := prop.DefaultConfig()
		c.Versions = []string{v}
		c.MaxLongPrefill = 48
		for _, p := range prop.All() {
			if p.Name == "logprobs-match-reference" {
				continue // numeric backend: TestLogprobsMatchReference
			}
			trials := testtier.Sized(500, 1000)
			if p.Name == "determinism" {
				trials = testtier.Sized(50, 100) // two fresh runs each, uncached
			}
			res := search(t, r, c, p, seed, trials)
			if !res.Holds {
				t.Errorf("%s under %s fails:\n%s", p.Name, v, explain(t, r, res))
			} else if res.Trials != trials {
				t.Errorf("%s under %s: %d trials, want %d", p.Name, v, res.Trials, trials)
			}
		}
	}
}

// TestSearchFindsBugA: under v0.13 and v0.14 the search breaks both bug
// A properties, shrinks to at most 3 requests, and the shrunk scenario
// fails the same way replayed from its YAML, naming an imposter.
func TestSearchFindsBugA(t *testing.T) {
	seed := searchSeed(t)
	r := newRunner(t)
	for _, v := range []string{"v0.13", "v0.14"} {
		for _, name := range []string{"no-decode-before-prefill", "stale-slot-read"} {
			findBugA(t, r, v, name, seed)
		}
	}
}

func findBugA(t *testing.T, r *prop.Runner, version, name string, seed int64) {
	t.Helper()
	res := searchShared(t, prop.BugA(version), property(t, name), seed, 2000)
	if res.Holds {
		t.Fatalf("seed %d: %s held over %d %s scenarios; bug A went unnoticed", seed, name, res.Trials, version)
	}
	t.Logf("%s %s: counterexample after %d trials, %d shrinks: %s", version, name, res.Trials, res.Shrinks, res.Shrunk)
	if n := len(res.Shrunk.Requests); n > 3 {
		t.Errorf("%s: shrunk to %d requests, want at most 3:\n%s", name, n, explain(t, r, res))
	}
	rep := replay(t, r, res)
	if name == "stale-slot-read" && len(rep.Imposters) == 0 {
		t.Errorf("the stale read is not an imposter (a new request on the decode path):\n%s", explain(t, r, res))
	}
}

// Bug A's minimum, reasoned out and checked.
//
// One request cannot show a stale read: a pool that fits it never makes
// it preempt, so it only ever pops fresh, zeroed blocks, and reads zeros
// or its own writes. Two suffice in general, two ways: with
// max_num_batched_tokens 1 every new request is given exactly one token,
// so one finished request and one new one that lands on its slot do it;
// and with preemption a request is its own previous occupant, re-admitted
// with 0 computed tokens and 1 token onto blocks that still hold its
// first attempt's state.
//
// The incident's shape needs three. With a budget of at least 2,
// long_prefill_token_threshold off (vLLM's default; a threshold of 1 cuts
// every admission to one token, like a budget of 1) and prompts of at
// least 2 tokens, a new request gets 1 token only when
// other rows of the same step took the rest, so some request Q is
// scheduled beside it; the slot's bytes came from a request P that freed
// it, which without preemption means P finished, so P is neither Q (still
// running) nor the new request (which held nothing before).
//
// The search must reach these minima (over three seeds, as a greedy
// shrinker can stop in a local minimum) and never go below them.
func TestBugAMinimum(t *testing.T) {
	seed := searchSeed(t)
	r := newRunner(t)
	stale := property(t, "stale-slot-read")
	incident := incidentShape("v0.13")
	for _, c := range []struct {
		name string
		cfg  prop.Config
		p    prop.Property
		min  int
	}{
		{"any budget, preemption allowed", prop.BugA("v0.13"), stale, 2},
		{"budget ≥ 2, no preemption", incident, prop.WithoutPreemption(stale), 3},
	} {
		best := 0
		for s := seed; s < seed+3; s++ {
			res := searchShared(t, c.cfg, c.p, s, 2000)
			if res.Holds {
				t.Fatalf("%s, seed %d: no counterexample in %d trials", c.name, s, res.Trials)
			}
			n := len(res.Shrunk.Requests)
			t.Logf("%s, seed %d: %d requests: %s", c.name, s, n, res.Shrunk)
			if n < c.min {
				t.Errorf("%s: a %d-request counterexample beats the argued minimum %d:\n%s", c.name, n, c.min, explain(t, r, res))
			}
			if best == 0 || n < best {
				best = n
			}
		}
		if best != c.min {
			t.Errorf("%s: the shrinker got down to %d requests, the minimum is %d", c.name, best, c.min)
		}
	}
}

// TestSearchFindsV014Residual: v0.14 fixed the reorder, but the Mamba
// split still goes by query length; the search must find a new request
// that the reorder put in the prefill region and the split still sent
// down the decode path. Nothing here builds that batch by hand.
func TestSearchFindsV014Residual(t *testing.T) {
	seed := searchSeed(t)
	r := newRunner(t)
	c := incidentShape("v0.14") // a budget of 1 makes every batch one row: not the residue's shape
	res := searchShared(t, c, property(t, "no-decode-before-prefill"), seed, 2000)
	if res.Holds {
		t.Fatalf("seed %d: v0.14 held over %d scenarios; its residual split bug went unnoticed", seed, res.Trials)
	}
	t.Logf("counterexample after %d trials, %d shrinks: %s", res.Trials, res.Shrinks, res.Shrunk)
	replay(t, r, res)

	sc, err := r.Build(res.Shrunk, "residual")
	if err != nil {
		t.Fatal(err)
	}
	residue := false
	_, err = engine.Run(sc, engine.Options{Observe: func(rec *step.Record) {
		for _, row := range rec.Rows {
			if row.NumComputed == 0 && row.Region == sched.RegionPrefill && row.Path == sched.PathDecode {
				residue = true
			}
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if !residue {
		t.Errorf("no row was reordered as a prefill yet split onto the decode path:\n%s", explain(t, r, res))
	}
}

// TestSearchFindsBugB: with a 16..20-bit index on the tiny hybrid and a
// few hundred blocks, the search finds a wrapped prefill write.
func TestSearchFindsBugB(t *testing.T) {
	seed := searchSeed(t)
	r := newRunner(t)
	res := searchShared(t, prop.BugB(), property(t, "wrong-address-write"), seed, 1000)
	if res.Holds {
		t.Fatalf("seed %d: no wrapped write in %d scenarios", seed, res.Trials)
	}
	t.Logf("counterexample after %d trials, %d shrinks (%d runs): %s", res.Trials, res.Shrinks, res.Runs, res.Shrunk)
	if n := len(res.Shrunk.Requests); n > 3 {
		t.Errorf("shrunk to %d requests, want at most 3 (one long prompt can reach the wrapping slot alone):\n%s", n, explain(t, r, res))
	}
	rep := replay(t, r, res)
	if rep.Cache.FirstWrappingSlot < 0 || rep.Cache.HighestSlot < rep.Cache.FirstWrappingSlot {
		t.Errorf("wrong-address-write without a slot past the first wrapping one (%d, highest %d)", rep.Cache.FirstWrappingSlot, rep.Cache.HighestSlot)
	}
}

// TestLogprobsMatchReference runs the numeric property where the mock
// backend is built in: it holds when fixed and breaks under v0.13.
func TestLogprobsMatchReference(t *testing.T) {
	t.Parallel() // an independent search or replay: the suite's longest, run beside the rest
	seed := searchSeed(t)
	r := newRunner(t)
	p := property(t, "logprobs-match-reference")
	c := prop.DefaultConfig()
	c.Presets = []string{"tiny-hybrid"}
	res := search(t, r, c, p, seed, testtier.Sized(30, 100))
	if res.Unavailable {
		// This file imports the mock's registration: never skip.
		t.Fatalf("logprobs-match-reference could not run on the mock backend: %v", res.Err)
	}
	if !res.Holds {
		t.Fatalf("fixed: %s", explain(t, r, res))
	}
	if testtier.Long() {
		res = search(t, r, prop.BugA("v0.13"), p, seed, 400) // the full search: 116 numeric draws at seed 1
	} else {
		res = searchShared(t, numericBugA(), p, seed, 400)
	}
	if res.Holds {
		t.Fatalf("seed %d: v0.13 log-probs matched the reference over %d scenarios", seed, res.Trials)
	}
	t.Logf("v0.13: counterexample after %d trials, %d shrinks (%d runs): %s\n%v", res.Trials, res.Shrinks, res.Runs, res.Shrunk, res.Err)
	if res.Shrunk.Backend != "mock" {
		t.Errorf("the counterexample runs on backend %s, want mock", res.Shrunk.Backend)
	}
	replay(t, r, res)
}

// TestSearchIsDeterministic: one seed, one counterexample.
func TestSearchIsDeterministic(t *testing.T) {
	seed := searchSeed(t)
	p := property(t, "stale-slot-read")
	a := search(t, newRunner(t), prop.BugA("v0.13"), p, seed, 2000)
	b := search(t, newRunner(t), prop.BugA("v0.13"), p, seed, 2000)
	if a.Holds || b.Holds {
		t.Fatalf("seed %d: no counterexample", seed)
	}
	if a.Trials != b.Trials || a.Shrunk.String() != b.Shrunk.String() || a.Shrunk.Seed != b.Shrunk.Seed {
		t.Fatalf("seed %d gave two searches:\n%d trials, %s\n%d trials, %s", seed, a.Trials, a.Shrunk, b.Trials, b.Shrunk)
	}
}

// drifting is a policy with hidden state that outlives a run: every
// other call it schedules with one token less of budget, so a scenario's
// second run can differ from its first.
type drifting struct{ calls *int }

func (drifting) Name() string { return "drifting" }

func (d drifting) Schedule(st *sched.State, out *sched.Output) error {
	*d.calls++
	if *d.calls%2 == 1 && st.Cfg.MaxNumBatchedTokens > 1 {
		st.Cfg.MaxNumBatchedTokens--
		defer func() { st.Cfg.MaxNumBatchedTokens++ }()
	}
	return sched.V1Policy{}.Schedule(st, out)
}

// TestDeterminismCatchesHiddenState: the determinism property must fail
// on a run whose behaviour depends on state outside the scenario.
func TestDeterminismCatchesHiddenState(t *testing.T) {
	r := newRunner(t)
	r.Policy = drifting{calls: new(int)}
	res := search(t, r, prop.DefaultConfig(), property(t, "determinism"), searchSeed(t), 200)
	if res.Holds {
		t.Fatalf("determinism held over %d runs of a policy with hidden state", res.Trials)
	}
	t.Logf("%s: %v", res.Shrunk, res.Err)
}

// TestObserverAgreesOnDecodeBeforePrefill: the properties' own observer
// and the symbolic backend's check are two witnesses of the same
// invariant; over v0.13 and v0.14 scenarios, where it breaks often, they
// must agree on every run.
func TestObserverAgreesOnDecodeBeforePrefill(t *testing.T) {
	r := newRunner(t)
	seen := 0
	for _, v := range []string{"v0.13", "v0.14"} {
		for i := int64(0); i < 300; i++ {
			p := prop.Sample(prop.BugA(v), searchSeed(t)+i)
			o := r.Run(p)
			if o.Err != nil {
				t.Fatal(o.Err)
			}
			sim := o.Report.Count(invariant.NoDecodeBeforePrefill) > 0
			if sim != (o.DecodeBeforePrefill != "") {
				t.Fatalf("%s: simulator counts %d, observer says %q", p, o.Report.Count(invariant.NoDecodeBeforePrefill), o.DecodeBeforePrefill)
			}
			if sim {
				seen++
			}
		}
	}
	if seen == 0 {
		t.Fatal("no run broke the invariant: the agreement proves nothing")
	}
}

// Mutant policies, each breaking one property on purpose.

// overBudget schedules with one token more than max_num_batched_tokens
// and one sequence more than max_num_seqs.
type overBudget struct{}

func (overBudget) Name() string { return "over-budget" }
func (overBudget) Schedule(st *sched.State, out *sched.Output) error {
	st.Cfg.MaxNumBatchedTokens++
	st.Cfg.MaxNumSeqs++
	defer func() { st.Cfg.MaxNumBatchedTokens--; st.Cfg.MaxNumSeqs-- }()
	return sched.V1Policy{}.Schedule(st, out)
}

// leaky takes one block for nobody on the first step that schedules
// work, and never gives it back. One block, not one a step: a block a step
// drains the pool into endless preemption, runs of seconds that prove no
// more than one lost block does.
type leaky struct{}

func (leaky) Name() string { return "leaky" }
func (leaky) Schedule(st *sched.State, out *sched.Output) error {
	first := len(st.Running) == 0 && st.KV.Pool.NumHeld() == 0 // nothing held, nothing leaked yet
	if err := (sched.V1Policy{}).Schedule(st, out); err != nil {
		return err
	}
	if first && len(out.Rows) > 0 && st.KV.Pool.NumFree() > 0 {
		_, err := st.KV.Pool.Pop(1 << 40)
		return err
	}
	return nil
}

// neverAdmit schedules running requests only: nothing ever starts.
type neverAdmit struct{}

func (neverAdmit) Name() string { return "never-admit" }
func (neverAdmit) Schedule(st *sched.State, out *sched.Output) error {
	w := st.Waiting
	st.Waiting = nil
	defer func() { st.Waiting = w }()
	return sched.V1Policy{}.Schedule(st, out)
}

// TestEveryPropertyCanFail: a property that cannot fail proves nothing
// when it holds. Each one must be broken by the search under a version,
// index width or policy built to break it.
func TestEveryPropertyCanFail(t *testing.T) {
	t.Parallel() // an independent search or replay: the suite's longest, run beside the rest
	seed := searchSeed(t)
	cases := map[string]struct {
		cfg    prop.Config
		policy sched.Policy
	}{
		"no-decode-before-prefill": {prop.BugA("v0.13"), nil},
		"stale-slot-read":          {prop.BugA("v0.13"), nil},
		"wrong-address-write":      {prop.BugB(), nil},
		"budget-and-max-num-seqs":  {prop.DefaultConfig(), overBudget{}},
		"conservation":             {prop.DefaultConfig(), leaky{}},
		"liveness":                 {prop.DefaultConfig(), neverAdmit{}},
		"determinism":              {prop.DefaultConfig(), drifting{calls: new(int)}},
		"logprobs-match-reference": {numericBugA(), nil},
	}
	for _, p := range prop.All() {
		c, ok := cases[p.Name]
		if !ok {
			t.Errorf("property %s has no case that breaks it", p.Name)
			continue
		}
		var res prop.Result
		if c.policy == nil {
			res = searchShared(t, c.cfg, p, seed, 1000)
		} else {
			r := newRunner(t)
			r.Policy = c.policy
			res = search(t, r, c.cfg, p, seed, 1000)
		}
		if res.Unavailable {
			t.Logf("%s: %v", p.Name, res.Err)
			continue
		}
		if res.Holds {
			t.Errorf("%s held over %d scenarios built to break it", p.Name, res.Trials)
			continue
		}
		t.Logf("%s: broken after %d trials, shrunk to %d requests: %v", p.Name, res.Trials, len(res.Shrunk.Requests), res.Err)
	}
}

// TestCheckedInvariantsMatchProperties keeps the property list honest:
// every simulator invariant but time-monotonic (an internal error, not a
// scenario property) is judged by some property.
func TestCheckedInvariantsMatchProperties(t *testing.T) {
	judged := map[invariant.Invariant]bool{}
	for _, p := range prop.All() {
		for _, inv := range p.Invariants {
			judged[inv] = true
		}
	}
	for _, inv := range invariant.All() {
		if !judged[inv] && inv != invariant.TimeMonotonic {
			t.Errorf("invariant %s is not judged by any property", inv)
		}
	}
}

// benchFind runs one search per iteration, seeds 1, 2, 3, ..., and
// reports medians over them: trials to the first counterexample, wall
// time to it, and the shrunk size in requests.
func benchFind(b *testing.B, c prop.Config, p prop.Property) {
	r := newRunner(b)
	var trials, ms, size []float64
	for i := 0; b.Loop(); i++ {
		res := search(b, r, c, p, int64(1+i), 5000)
		if res.Holds {
			b.Fatalf("seed %d: no counterexample in %d trials", 1+i, res.Trials)
		}
		trials = append(trials, float64(res.Trials))
		ms = append(ms, float64(res.TimeToFind.Microseconds())/1e3)
		size = append(size, float64(len(res.Shrunk.Requests)))
	}
	b.ReportMetric(median(trials), "trials-to-find")
	b.ReportMetric(median(ms), "ms-to-find")
	b.ReportMetric(median(size), "shrunk-requests")
	b.ReportMetric(slices.Max(size), "max-shrunk-requests")
}

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// BenchmarkFindBugA: v0.13, stale-slot-read, any budget.
func BenchmarkFindBugA(b *testing.B) {
	benchFind(b, prop.BugA("v0.13"), property(b, "stale-slot-read"))
}

// BenchmarkFindBugAIncidentShape: budget ≥ 2 and no preemption, the
// incident's three-request shape.
func BenchmarkFindBugAIncidentShape(b *testing.B) {
	benchFind(b, incidentShape("v0.13"), prop.WithoutPreemption(property(b, "stale-slot-read")))
}

// BenchmarkFindBugAV014: the v0.14 residue, budget ≥ 2.
func BenchmarkFindBugAV014(b *testing.B) {
	benchFind(b, incidentShape("v0.14"), property(b, "no-decode-before-prefill"))
}

// BenchmarkFindBugB: a 16..20-bit index on the tiny hybrid.
func BenchmarkFindBugB(b *testing.B) {
	benchFind(b, prop.BugB(), property(b, "wrong-address-write"))
}
