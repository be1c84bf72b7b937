package prop

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/leanovate/gopter"
	gprop "github.com/leanovate/gopter/prop"

	"statesim/engine"
	"statesim/invariant"
	"statesim/scenarios"
	"statesim/setup"
)

// Options drive one search.
type Options struct {
	Seed       int64
	Trials     int // scenarios to generate before declaring the property holds
	MaxShrinks int // successful shrink steps at most (0: 1000)
	// OnTrial, when set, is called once per generated scenario (not per
	// shrink candidate), for progress bars.
	OnTrial func(property string, trial int)
}

// Result is one property's search outcome.
type Result struct {
	Property string
	Seed     int64
	Holds    bool
	// Unavailable: this build cannot check the property (Err says why).
	Unavailable bool
	// Trials is how many scenarios were generated, the counterexample
	// included.
	Trials int
	// Shrinks is how many shrink steps succeeded; Original is the first
	// counterexample, Shrunk the smallest one found.
	Shrinks          int
	Original, Shrunk *Params
	// Err is the property's failure on Shrunk.
	Err error
	// Runs is the number of simulations the search executed.
	Runs int
	// TimeToFind is the wall time from the start to the first
	// counterexample (generation and runs, no shrinking); Elapsed is the
	// whole search. Measurements only: nothing replays them.
	TimeToFind, Elapsed time.Duration
}

// Check searches for a counterexample to p among scenarios drawn from c,
// shrinking the first one it finds. gopter runs with one worker, so a
// seed replays exactly.
func Check(r *Runner, c Config, p Property, opt Options) (Result, error) {
	if p.Narrow != nil {
		c = p.Narrow(c)
	}
	if err := c.Validate(); err != nil {
		return Result{}, fmt.Errorf("generator config: %w", err)
	}
	params := gopter.DefaultTestParametersWithSeed(opt.Seed)
	params.MinSuccessfulTests = max(1, opt.Trials)
	params.MaxShrinkCount = opt.MaxShrinks
	if params.MaxShrinkCount <= 0 {
		params.MaxShrinkCount = 1000
	}
	params.Workers = 1
	res := Result{Property: p.Name, Seed: opt.Seed}
	runs0 := r.Runs
	start := time.Now()
	shrinking := false
	var unavailable, lastFail error
	g := gprop.ForAll(func(x *Params) bool {
		if unavailable != nil {
			return true // nothing to learn from more trials
		}
		if !shrinking {
			res.Trials++
			if opt.OnTrial != nil {
				opt.OnTrial(p.Name, res.Trials)
			}
		}
		err := safeCheck(p, r, x)
		if errors.Is(err, ErrUnavailable) {
			unavailable = err
			return true
		}
		if err != nil {
			lastFail = err // the last failure is the shrunk value's
			if !shrinking {
				shrinking = true
				res.TimeToFind = time.Since(start)
			}
		}
		return err == nil
	}, Gen(c))
	tr := g.Check(params)
	res.Elapsed = time.Since(start)
	res.Runs = r.Runs - runs0
	if unavailable != nil {
		res.Unavailable, res.Err = true, unavailable
		return res, nil
	}
	switch tr.Status {
	case gopter.TestPassed, gopter.TestProved:
		res.Holds = true
		return res, nil
	case gopter.TestFailed, gopter.TestError:
		if len(tr.Args) == 0 {
			return res, fmt.Errorf("property %s: gopter failed without arguments: %v", p.Name, tr.Error)
		}
		a := tr.Args[0]
		res.Original, _ = a.OrigArg.(*Params)
		res.Shrunk, _ = a.Arg.(*Params)
		res.Shrinks = a.Shrinks
		if res.Shrunk == nil {
			return res, fmt.Errorf("property %s: gopter returned %T", p.Name, a.Arg)
		}
		res.Err = safeCheck(p, r, res.Shrunk)
		if res.Err == nil && lastFail != nil {
			res.Err = fmt.Errorf("%w (it passed when checked again: the runs are not deterministic)", lastFail)
		}
		if res.Err == nil {
			return res, fmt.Errorf("property %s: gopter reported a failure the check never returned", p.Name)
		}
		return res, nil
	}
	return res, fmt.Errorf("property %s: gopter status %v", p.Name, tr.Status)
}

// safeCheck turns a panic in the simulator into the property's failure,
// so the scenario that caused it is shrunk and written like any other.
func safeCheck(p Property, r *Runner, x *Params) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("panic: %v", v)
		}
	}()
	return p.Check(r, x)
}

// Written is a counterexample saved as a replayable scenario.
type Written struct {
	YAML, JSONL string
	// Expect lists the invariants the scenario violates, as in its
	// "# expect:" header line.
	Expect []string
}

// Write saves res.Shrunk as DIR/NAME.yaml plus DIR/NAME.jsonl (its
// requests), with a "# expect:" header listing the invariants it
// violates, and checks that the written file loads and replays them.
func Write(r *Runner, res Result, dir, name, foundBy string) (*Written, error) {
	p := res.Shrunk
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	w := &Written{YAML: filepath.Join(dir, name+".yaml"), JSONL: filepath.Join(dir, name+".jsonl")}
	if err := os.WriteFile(w.JSONL, p.TraceJSONL(), 0o644); err != nil {
		return nil, err
	}
	sc, err := r.Build(p, name)
	if err != nil {
		return nil, err
	}
	sc.Workload.Path = name + ".jsonl" // beside the YAML, wherever it moves
	o := r.Run(p)
	if o.Err == nil {
		for _, ic := range o.Report.Invariants {
			if ic.Count > 0 {
				w.Expect = append(w.Expect, ic.Name)
			}
		}
	}
	if len(w.Expect) == 0 {
		w.Expect = []string{"clean"}
	}
	y, err := scenarios.Marshal(sc)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Counterexample to property %s, shrunk from %d to %d requests in %d shrinks.\n",
		res.Property, len(res.Original.Requests), len(p.Requests), res.Shrinks)
	if foundBy != "" {
		fmt.Fprintf(&b, "# Found by: %s\n", foundBy)
	}
	if res.Err != nil {
		fmt.Fprintf(&b, "# Failure: %s\n", oneLine(res.Err.Error()))
	}
	fmt.Fprintf(&b, "# expect: %s\n", strings.Join(w.Expect, " "))
	b.Write(y)
	if err := os.WriteFile(w.YAML, []byte(b.String()), 0o644); err != nil {
		return nil, err
	}
	if o.Err == nil && r.Policy == nil { // a policy in code is not in the file
		if err := replays(w); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// replays loads the written counterexample as `statesim run` does, runs
// it, and requires the invariants its header expects.
func replays(w *Written) error {
	st, err := setup.Load(w.YAML, nil)
	if err != nil {
		return fmt.Errorf("the written counterexample does not load: %w", err)
	}
	rep, err := engine.RunSetup(st, engine.Options{})
	if err != nil {
		return fmt.Errorf("the written counterexample does not run: %w", err)
	}
	var got []string
	for _, ic := range rep.Invariants {
		if ic.Count > 0 {
			got = append(got, ic.Name)
		}
	}
	if len(got) == 0 {
		got = []string{"clean"}
	}
	if !slices.Equal(got, w.Expect) {
		return fmt.Errorf("%s replays with %s, not the %s found", w.YAML, strings.Join(got, " "), strings.Join(w.Expect, " "))
	}
	return nil
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// ParseExpect reads the "# expect: a b c" header of a scenario file: the
// invariants it must violate, or "clean".
func ParseExpect(data []byte) ([]string, error) {
	for i, line := range strings.Split(string(data), "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "# expect:")
		if !ok {
			continue
		}
		names := strings.Fields(rest)
		if len(names) == 0 {
			return nil, fmt.Errorf("line %d: empty expect line (want invariant names or clean)", i+1)
		}
		for _, n := range names {
			if n == "clean" && len(names) == 1 {
				continue
			}
			if _, err := invariant.Parse(n); err != nil {
				return nil, fmt.Errorf("line %d: %v", i+1, err)
			}
		}
		return names, nil
	}
	return nil, fmt.Errorf("no \"# expect:\" line")
}
