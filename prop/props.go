package prop

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"statesim/invariant"
	"statesim/model"
	"statesim/scenarios"
)

// Property is one named statement every run must satisfy.
type Property struct {
	Name string
	Doc  string
	// Invariants are the simulator checks the property judges by (its
	// own observations come on top).
	Invariants []invariant.Invariant
	Check      func(r *Runner, p *Params) error
	// Narrow, when set, restricts the generator to the scenarios the
	// property can judge (the numeric backend's shapes).
	Narrow func(c Config) Config
}

// violated fails when any of invs was counted, naming the first one kept.
func violated(o *Outcome, invs ...invariant.Invariant) error {
	for _, inv := range invs {
		if n := o.Report.Count(inv); n > 0 {
			for _, v := range o.Report.Violations {
				if v.Invariant == inv || v.Name == inv.String() {
					return fmt.Errorf("%d× %s", n, v.String())
				}
			}
			return fmt.Errorf("%d× %s", n, inv)
		}
	}
	return nil
}

// invariantProp is a property judged by simulator invariants plus, when
// extra is set, its own observation.
func invariantProp(name, doc string, extra func(*Outcome, *Params) string, invs ...invariant.Invariant) Property {
	return Property{Name: name, Doc: doc, Invariants: invs, Check: func(r *Runner, p *Params) error {
		o := r.Run(p)
		if o.Err != nil {
			return fmt.Errorf("run failed: %w", o.Err)
		}
		if err := violated(o, invs...); err != nil {
			return err
		}
		if extra != nil {
			if s := extra(o, p); s != "" {
				return errors.New(s)
			}
		}
		return nil
	}}
}

// joinFound joins the non-empty observations.
func joinFound(obs ...string) string {
	var found []string
	for _, s := range obs {
		if s != "" {
			found = append(found, s)
		}
	}
	return strings.Join(found, "; ")
}

// All lists the properties in the order they are checked.
func All() []Property {
	return []Property{
		invariantProp("no-decode-before-prefill",
			"a request with no computed tokens never takes a Mamba decode path",
			func(o *Outcome, _ *Params) string {
				return joinFound(o.DecodeBeforePrefill, o.Classification)
			}, invariant.NoDecodeBeforePrefill),
		invariantProp("stale-slot-read",
			"a kernel never reads a state slot or KV block holding bytes not its own", nil,
			invariant.StaleSlotRead),
		invariantProp("wrong-address-write",
			"a state write always lands in the intended slot", nil,
			invariant.WrongAddressWrite),
		invariantProp("budget-and-max-num-seqs",
			"every step schedules at most max_num_batched_tokens tokens and runs at most max_num_seqs requests",
			func(o *Outcome, _ *Params) string { return o.Budget + o.Seqs }, invariant.TokenBudget, invariant.MaxNumSeqs),
		invariantProp("conservation",
			"every block is free or held by exactly one running request, and a finished request holds none",
			func(o *Outcome, _ *Params) string { return o.Conservation }, invariant.BlockConservation),
		invariantProp("liveness",
			"every request finishes",
			func(o *Outcome, p *Params) string {
				if n := int64(len(p.Requests)); o.Report.Requests != n || o.Report.Finished != n {
					return fmt.Sprintf("%d of %d requests arrived, %d finished", o.Report.Requests, n, o.Report.Finished)
				}
				return ""
			}, invariant.Liveness),
		{Name: "determinism", Doc: "the same scenario and seed give the same step trace and report, byte for byte",
			Check: func(r *Runner, p *Params) error {
				a, err := r.TraceHash(p)
				if err != nil {
					return fmt.Errorf("run failed: %w", err)
				}
				b, err := r.TraceHash(p)
				if err != nil {
					return fmt.Errorf("second run failed: %w", err)
				}
				if a != b {
					return fmt.Errorf("two runs hashed %s and %s", a[:16], b[:16])
				}
				return nil
			}},
		{Name: "logprobs-match-reference", Doc: "with the numeric mock backend, every generated token's log-prob equals the reference recomputation's",
			Check: checkLogprobs, Narrow: onMock},
	}
}

// ByName returns the named properties; "all" or empty selects All(), and
// a name ending in /no-preemption is that property WithoutPreemption.
func ByName(names []string) ([]Property, error) {
	all := All()
	if len(names) == 0 || len(names) == 1 && names[0] == "all" {
		return all, nil
	}
	var out []Property
	for _, n := range names {
		base, narrow := strings.CutSuffix(n, "/no-preemption")
		found := false
		for _, p := range all {
			if p.Name == base {
				if narrow {
					p = WithoutPreemption(p)
				}
				out, found = append(out, p), true
			}
		}
		if !found {
			known := make([]string, len(all))
			for i, p := range all {
				known[i] = p.Name
			}
			return nil, fmt.Errorf("unknown property %q (known: %s)", n, strings.Join(known, ", "))
		}
	}
	return out, nil
}

// onMock runs the scenarios on the numeric mock backend, over the presets
// it computes (float32 activations and state), or tiny-hybrid if none of
// c's is one. The mock does real arithmetic per token, so prompts and
// outputs are capped at 64 and 16 tokens: a search stays in seconds.
func onMock(c Config) Config {
	// A numeric backend already chosen (cuda, from statesim check
	// --backend) stays; the symbolic one computes no log-probs.
	if len(c.Backends) != 1 || c.Backends[0] == "symbolic" {
		c.Backends = []string{"mock"}
	}
	c.MaxPrompt = max(c.MinPrompt, min(c.MaxPrompt, 64))
	c.MaxOutput = max(c.MinOutput, min(c.MaxOutput, 16))
	c.SpecMethods = nil // the numeric backends model no draft tokens
	var keep []string
	for _, name := range c.Presets {
		if s, err := model.Preset(name); err == nil && s.DType == "float32" && s.SSMStateDType == "float32" {
			keep = append(keep, name)
		}
	}
	if len(keep) == 0 {
		keep = []string{"tiny-hybrid"}
	}
	c.Presets = keep
	return c
}

// Numeric restricts c to what the numeric backends compute (float32
// presets, short requests) and runs it on backend ("mock" or "cuda").
func Numeric(c Config, backend string) Config {
	c.Backends = []string{backend}
	return onMock(c)
}

// checkLogprobs requires the numeric backend's report to list no
// divergent request (the generator puts p on the mock backend), and
// cross-checks one request against the float64 reference: the first
// divergent one, or else the last request.
func checkLogprobs(r *Runner, p *Params) error {
	o := r.Run(p)
	if o.Err != nil {
		var ie *scenarios.InputError
		if errors.As(o.Err, &ie) && strings.Contains(ie.Msg, "not available") {
			return fmt.Errorf("%w: backend mock: %v", ErrUnavailable, o.Err)
		}
		if errors.As(o.Err, &ie) && strings.Contains(ie.Msg, "use backend.kind symbolic") {
			// A --set turned on what the numeric backends do not model
			// (async scheduling; shared KV blocks on cuda): the
			// generator keeps them off, an override cannot be undone.
			return fmt.Errorf("%w: %v", ErrUnavailable, o.Err)
		}
		return fmt.Errorf("run failed: %w", o.Err)
	}
	d := o.Report.Divergence
	if d == nil {
		return fmt.Errorf("%w: the %s backend reported no log-prob comparison", ErrUnavailable, o.Report.Backend)
	}
	id, firstBad := followed(p), -1
	if len(o.Report.DivergentRequests) > 0 {
		dv := o.Report.DivergentRequests[0]
		id, firstBad = dv.RequestID, dv.FirstBadToken
	}
	if err := r.crossCheck(p, o, id, firstBad); err != nil && !errors.Is(err, errNoTrace) {
		return err
	}
	if d.RequestsDivergent > 0 {
		first, _ := json.Marshal(o.Report.DivergentRequests[0])
		// crossCheck confirmed the first with the float64 reference; the
		// message stays the one kept counterexamples were written with.
		return fmt.Errorf("%d requests diverge from the reference: %s", d.RequestsDivergent, first)
	}
	return nil
}

// WithoutPreemption narrows p to runs with no preemption: a run that
// preempted counts as passing. Searching with it finds the incident's
// shape of bug A, where a block changes hands only when a request finishes.
func WithoutPreemption(p Property) Property {
	q := p
	q.Name = p.Name + "/no-preemption"
	q.Check = func(r *Runner, x *Params) error {
		if o := r.Run(x); o.Err == nil && o.Report.Preemptions > 0 {
			return nil
		}
		return p.Check(r, x)
	}
	return q
}
