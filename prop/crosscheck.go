package prop

import (
	"errors"
	"fmt"
	"math"

	"statesim/engine"
	"statesim/refmodel"
	"statesim/scenarios"
	"statesim/sim"
	"statesim/workload"
)

// crossCheck judges one request of a numeric run against the float64
// reference (package refmodel), which shares no arithmetic with the
// numeric backend: the engine's log-probs and its own reference's, as the
// run's token trace gives them, against the float64 log-probs of the same
// tokens. A healthy request must agree with both within
// refmodel.Tolerance; a divergent one (first bad token firstBad ≥ 0) must
// differ there from both, while the two references agree — so a mistake
// in the backend's arithmetic, which its own reference repeats, shows.
//
// o is p's run, which followed the last request (Runner.Run); another
// request takes a run of its own.
func (r *Runner) crossCheck(p *Params, o *Outcome, id int64, firstBad int) error {
	if id != followed(p) {
		if o = r.run(p, engine.Options{Follow: id, Following: true}); o.Err != nil {
			return fmt.Errorf("followed run: %w", o.Err)
		}
	}
	toks := o.Report.Tokens
	if len(toks) == 0 {
		// A backend without token traces (the CUDA one) is judged by its
		// own comparison alone.
		return errNoTrace
	}
	seed, prompt, err := promptOf(o.Scenario, id)
	if err != nil {
		return err
	}
	m, err := refmodel.ForSetup(o.Setup)
	if err != nil {
		return err
	}
	gen := make([]int32, len(toks))
	for k, t := range toks {
		gen[k] = t.Token
	}
	ref, err := m.Score(m.Prompt(seed, prompt), gen)
	if err != nil {
		return err
	}
	tol := refmodel.Tolerance
	for k, t := range toks {
		if d := math.Abs(t.ReferenceLP - ref[k].LogProb); !(d <= tol) {
			return fmt.Errorf("request %d, token %d: the %s backend's reference log-prob %.6g and the float64 reference's %.6g differ by %.3g (tolerance %g): the backend's arithmetic is wrong",
				id, k, o.Report.Backend, t.ReferenceLP, ref[k].LogProb, d, tol)
		}
		d := math.Abs(t.EngineLP - ref[k].LogProb)
		switch {
		case firstBad < 0 && !(d <= tol):
			return fmt.Errorf("request %d, token %d: engine log-prob %.6g, the float64 reference %.6g (|Δ| %.3g, tolerance %g), though the backend's own reference agrees with the engine",
				id, k, t.EngineLP, ref[k].LogProb, d, tol)
		case k == firstBad && d <= tol:
			return fmt.Errorf("request %d was reported divergent at token %d, yet its engine log-prob %.6g agrees with the float64 reference's %.6g",
				id, k, t.EngineLP, ref[k].LogProb)
		}
	}
	return nil
}

// errNoTrace: the backend keeps no token trace to cross-check.
var errNoTrace = errors.New("no token trace")

// followed is the request a numeric run keeps the token trace of: the
// last, which arrives into the busiest cache.
func followed(p *Params) int64 { return int64(len(p.Requests) - 1) }

// promptOf is the prompt identity (seed) and length of request id: the
// id-th arrival of the scenario's workload, drawn as the engine draws it.
func promptOf(sc *scenarios.Scenario, id int64) (uint64, int, error) {
	src, err := workload.New(&sc.Workload, sim.NewStreams(sc.Seed), "")
	if err != nil {
		return 0, 0, err
	}
	for n := int64(0); ; n++ {
		a, ok, err := src.Next()
		if err != nil {
			return 0, 0, err
		}
		if !ok {
			return 0, 0, fmt.Errorf("the workload has no request %d", id)
		}
		if n == id {
			return a.Seed, a.PromptLen, nil
		}
	}
}
