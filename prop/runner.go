package prop

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"statesim/engine"
	"statesim/report"
	"statesim/scenarios"
	"statesim/sched"
	"statesim/setup"
	"statesim/step"
)

// Outcome is one run of a generated scenario, with what the observers saw
// on their own, apart from the simulator's checks.
type Outcome struct {
	Scenario *scenarios.Scenario
	// Setup is the scenario settled (nil when it could not be).
	Setup  *setup.Setup
	Report *report.Report
	// Err is a run that could not complete: a setup error or a component
	// that broke. Every property fails on it.
	Err error
	// Observed problems, first occurrence each ("" = none).
	Budget, Seqs, Conservation, DecodeBeforePrefill string
	// Classification is the first row whose kernel path (or the batch
	// order) disagrees with the version's rules, re-derived from the
	// rows' token counts (classRules).
	Classification string
}

// Runner builds and runs generated scenarios. Trace files go to Dir,
// named by content, so the same requests are written once. Outcomes are
// cached by Params, so properties checked over the same seed share runs.
// A Runner is not safe for concurrent use.
type Runner struct {
	Dir string
	// Sets are --set overrides applied to every generated scenario (by
	// marshalling it and parsing it back with the overrides).
	Sets []string
	// Policy, when set, replaces the version's scheduling policy in every
	// run (a user policy under test; see engine.Options.Policy).
	Policy sched.Policy
	// Runs counts simulations actually executed.
	Runs  int
	cache map[string]*Outcome
}

// NewRunner writes its trace files under dir.
func NewRunner(dir string, sets []string) *Runner {
	return &Runner{Dir: dir, Sets: sets, cache: map[string]*Outcome{}}
}

// Build writes p's trace and returns its scenario, with the overrides
// applied; the pool is sized for the speculative tokens and prefix
// caching the overrides leave, unless they set num_gpu_blocks_override.
func (r *Runner) Build(p *Params, name string) (*scenarios.Scenario, error) {
	data := p.TraceJSONL()
	sum := sha256.Sum256(data)
	path := filepath.Join(r.Dir, "req-"+hex.EncodeToString(sum[:8])+".jsonl")
	if _, err := os.Stat(path); err != nil {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return nil, err
		}
	}
	sc, err := p.Scenario(name, path)
	if err != nil || len(r.Sets) == 0 {
		return sc, err
	}
	sc.Description += ", then --set " + strings.Join(r.Sets, " --set ")
	y, err := scenarios.Marshal(sc)
	if err != nil {
		return nil, err
	}
	// Settled as statesim run settles it, so a bad override is bad input
	// naming its --set, whichever rule refuses it.
	st, err := setup.Parse(y, name, r.Sets)
	if err != nil {
		return nil, err
	}
	sc = st.Scenario
	if !r.setsPool() {
		p.sizePool(sc)
	}
	return sc, nil
}

// setsPool reports whether an override sets the pool itself.
func (r *Runner) setsPool() bool {
	for _, s := range r.Sets {
		if k, _, _ := strings.Cut(s, "="); strings.TrimSpace(k) == "engine.num_gpu_blocks_override" {
			return true
		}
	}
	return false
}

// Run runs p once (or returns the cached outcome).
func (r *Runner) Run(p *Params) *Outcome {
	key := fmt.Sprintf("%+v", *p)
	if o, ok := r.cache[key]; ok {
		return o
	}
	opt := engine.Options{}
	if p.Backend != "symbolic" {
		// Numeric runs keep one request's token trace for crossCheck.
		opt.Follow, opt.Following = followed(p), true
	}
	o := r.run(p, opt)
	if len(r.cache) >= 1<<12 {
		clear(r.cache) // shrinking revisits recent values, not old ones
	}
	r.cache[key] = o
	return o
}

func (r *Runner) run(p *Params, opt engine.Options) *Outcome {
	o := &Outcome{}
	sc, err := r.Build(p, "generated")
	if err != nil {
		o.Err = err
		return o
	}
	o.Scenario = sc
	if o.Setup, o.Err = setup.Resolve(sc); o.Err != nil {
		return o
	}
	opt.Policy = r.Policy
	opt.Observe = o.observe(o.Setup)
	opt.Detail |= step.Holdings
	r.Runs++
	o.Report, o.Err = engine.RunSetup(o.Setup, opt)
	return o
}

// observe checks budget, max_num_seqs and block ownership after every
// step from the step record's raw facts (rows, every held block with the
// pool's view of its holder, pool counts), recomputed here rather than
// read from the engine's own checks: a second opinion, independent of
// package check.
func (o *Outcome) observe(st *setup.Setup) func(rec *step.Record) {
	sc := st.Scenario
	// seenAt[b] is the step (+1) that last saw block b in a table, and
	// seenBy[b] whose table: a slice, not a map, since this runs on every
	// step of every candidate a shrink tries.
	var seenAt []int64
	var seenBy []int64
	hasMamba := sc.Model.Shape.NumMambaLayers() > 0
	// With prefix caching a block may sit in several tables (a hit), the
	// pool's holder is its first taker, and the tables' entries count it
	// once per table: BlocksHeld + SharedBlockRefs.
	shared := st.Mamba.PrefixCaching
	cls := classifierFor(sc)
	decodeNoState := func(rec *step.Record, row *step.Row, derived sched.Path) {
		if hasMamba && o.DecodeBeforePrefill == "" {
			o.DecodeBeforePrefill = fmt.Sprintf("step %d: request %d with 0 computed tokens and %d scheduled is on the Mamba decode path (recorded %s, the version's rules give %s)",
				rec.Step, row.RequestID, row.NumScheduled, row.Path, derived)
		}
	}
	return func(rec *step.Record) {
		if s := cls.check(rec, decodeNoState); s != "" && o.Classification == "" {
			o.Classification = s
		}
		sum := 0
		for i := range rec.Rows {
			sum += rec.Rows[i].NumScheduled
		}
		if sum > sc.Engine.MaxNumBatchedTokens && o.Budget == "" {
			o.Budget = fmt.Sprintf("step %d scheduled %d tokens, max_num_batched_tokens %d", rec.Step, sum, sc.Engine.MaxNumBatchedTokens)
		}
		if n := rec.Running; n > sc.Engine.MaxNumSeqs && o.Seqs == "" {
			o.Seqs = fmt.Sprintf("step %d has %d running requests, max_num_seqs %d", rec.Step, n, sc.Engine.MaxNumSeqs)
		}
		for _, f := range rec.Finished {
			if f.BlocksHeld != 0 && o.Conservation == "" {
				o.Conservation = fmt.Sprintf("request %d finished still holding %d blocks", f.RequestID, f.BlocksHeld)
			}
		}
		if o.Conservation != "" {
			return
		}
		if n := rec.NumBlocks; len(seenAt) != n {
			seenAt, seenBy = make([]int64, n), make([]int64, n)
		}
		stamp := rec.Step + 1
		distinct := 0
		for _, h := range rec.Held {
			b := h.Block
			if b < 0 || int(b) >= len(seenAt) {
				o.Conservation = fmt.Sprintf("step %d: request %d's table has block %d, outside the pool", rec.Step, h.Table, b)
				return
			}
			if seenAt[b] == stamp {
				if shared && seenBy[b] != h.Table {
					continue
				}
				o.Conservation = fmt.Sprintf("step %d: block %d in the tables of requests %d and %d", rec.Step, b, seenBy[b], h.Table)
				return
			}
			seenAt[b], seenBy[b] = stamp, h.Table
			distinct++
			if h.Pool != h.Table && !shared {
				o.Conservation = fmt.Sprintf("step %d: request %d's table has block %d, the pool says %d holds it", rec.Step, h.Table, b, h.Pool)
				return
			}
		}
		held := distinct
		if n := rec.BlocksHeld; n != held {
			o.Conservation = fmt.Sprintf("step %d: the pool says %d blocks held, running requests hold %d", rec.Step, n, held)
		} else if n+rec.SharedBlockRefs != len(rec.Held) {
			o.Conservation = fmt.Sprintf("step %d: %d blocks held and %d shared references, the tables name %d", rec.Step, n, rec.SharedBlockRefs, len(rec.Held))
		} else if free := rec.BlocksFree; free+held != rec.NumBlocks-1 {
			o.Conservation = fmt.Sprintf("step %d: %d free + %d held ≠ %d usable blocks", rec.Step, free, held, rec.NumBlocks-1)
		}
	}
}

// TraceHash runs p afresh with the step trace and the JSON report fed to
// one hash, for the determinism property.
func (r *Runner) TraceHash(p *Params) (string, error) {
	h := sha256.New()
	o := r.run(p, engine.Options{Trace: h})
	if o.Err != nil {
		return "", o.Err
	}
	if err := o.Report.WriteJSON(h); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// TempDir makes a directory for a Runner's trace files: in /dev/shm when
// the machine has it, since a search writes thousands of small files and
// on some disks each creation costs milliseconds.
func TempDir() (string, error) {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "statesim-prop-"); err == nil {
			return d, nil
		}
	}
	return os.MkdirTemp("", "statesim-prop-")
}

// ErrUnavailable marks a property this build cannot check.
var ErrUnavailable = errors.New("unavailable in this build")
