package engine

import (
	"errors"
	"math"

	"statesim/scenarios"
	"statesim/sched"
	"statesim/sim"
)

// StepLoad is what the step-time model charges a step for.
type StepLoad struct {
	PrefillTokens int64 // tokens of rows that are not single-token decodes
	DecodeRows    int64 // rows with 1 token and some already computed
	ContextTokens int64 // K/V positions attention reads: Σ computed + scheduled
	StateBytes    int64 // Mamba state read + written by the kernels
}

// LoadOf measures a scheduled step; stateBytes comes from the backend.
func LoadOf(out *sched.Output, stateBytes int64) StepLoad {
	l := StepLoad{StateBytes: stateBytes}
	for i := range out.Rows {
		r := &out.Rows[i]
		if r.NumScheduled == 1 && r.NumComputed > 0 {
			l.DecodeRows++
		} else {
			l.PrefillTokens += int64(r.NumScheduled)
		}
		l.ContextTokens += int64(r.NumComputed + r.NumScheduled)
	}
	return l
}

// StepNS is the step-time model, linear in the load so that it can be
// fitted to measured steps (FitTiming): overhead + prefill tokens ×
// prefill_token_ns + decode rows × decode_row_ns + context tokens ×
// context_token_ns + state bytes / state_bandwidth_gbs (1 GB/s = 1 B/ns).
func StepNS(t *scenarios.Timing, l StepLoad) float64 {
	return t.StepOverheadUS*1e3 + float64(l.PrefillTokens)*t.PrefillTokenNS + float64(l.DecodeRows)*t.DecodeRowNS +
		float64(l.ContextTokens)*t.ContextTokenNS + float64(l.StateBytes)/t.StateBandwidthGBs
}

// stepTime is a step's simulated duration, at least 1 ns.
func stepTime(t *scenarios.Timing, l StepLoad) sim.Time {
	ns := StepNS(t, l)
	if ns < 1 {
		ns = 1
	}
	return sim.Time(ns + 0.5)
}

// MeasuredStep is one step timed on a real engine, for calibration.
type MeasuredStep struct {
	Load StepLoad
	NS   float64
}

// FitTiming fits the model's coefficients to measured steps by
// non-negative least squares (a coefficient the data would make negative
// is held at 0 and the rest refitted). The state bandwidth is given, not
// fitted: every row moves the same state bytes, so state traffic is
// collinear with the row counts and cannot be told apart from them.
func FitTiming(steps []MeasuredStep, stateBandwidthGBs float64) (scenarios.Timing, error) {
	const k = 4
	if !(stateBandwidthGBs > 0) {
		return scenarios.Timing{}, errors.New("fit timing: the state bandwidth must be > 0 GB/s")
	}
	if len(steps) < 2*k {
		return scenarios.Timing{}, errors.New("fit timing: need at least 8 measured steps")
	}
	row := func(s *MeasuredStep) ([k]float64, float64) {
		l := s.Load
		return [k]float64{1, float64(l.PrefillTokens), float64(l.DecodeRows), float64(l.ContextTokens)},
			s.NS - float64(l.StateBytes)/stateBandwidthGBs
	}
	// Columns are scaled to unit norm so that counts orders of magnitude
	// apart solve stably.
	var scale [k]float64
	for i := range steps {
		x, _ := row(&steps[i])
		for j := range k {
			scale[j] += x[j] * x[j]
		}
	}
	for j := range scale {
		scale[j] = math.Sqrt(scale[j])
	}
	var active [k]bool
	for j := range active {
		active[j] = scale[j] != 0
	}
	var c [k]float64
	for range k {
		// Normal equations over the active columns; the others pinned at 0.
		var a [k][k]float64
		var b [k]float64
		for i := range steps {
			x, y := row(&steps[i])
			for p := range k {
				if !active[p] {
					continue
				}
				b[p] += x[p] / scale[p] * y
				for q := range k {
					if active[q] {
						a[p][q] += x[p] / scale[p] * x[q] / scale[q]
					}
				}
			}
		}
		for p := range k {
			if !active[p] {
				a[p][p] = 1
			}
		}
		sol, ok := solve(a, b)
		if !ok {
			return scenarios.Timing{}, errors.New("fit timing: the measured loads do not vary independently (vary prefill tokens, decode rows and context)")
		}
		worst := -1
		for p := range k {
			c[p] = 0
			if active[p] {
				c[p] = sol[p] / scale[p]
			}
			if c[p] < 0 && (worst < 0 || c[p] < c[worst]) {
				worst = p
			}
		}
		if worst < 0 {
			break
		}
		active[worst] = false
	}
	for p := range c {
		c[p] = max(c[p], 0)
	}
	return scenarios.Timing{StepOverheadUS: c[0] / 1e3, PrefillTokenNS: c[1], DecodeRowNS: c[2], ContextTokenNS: c[3],
		StateBandwidthGBs: stateBandwidthGBs}, nil
}

// solve is Gaussian elimination with partial pivoting.
func solve(a [4][4]float64, b [4]float64) ([4]float64, bool) {
	const n = 4
	for col := range n {
		p := col
		for r := col + 1; r < n; r++ {
			if math.Abs(a[r][col]) > math.Abs(a[p][col]) {
				p = r
			}
		}
		if math.Abs(a[p][col]) < 1e-12 {
			return b, false
		}
		a[col], a[p] = a[p], a[col]
		b[col], b[p] = b[p], b[col]
		for r := col + 1; r < n; r++ {
			f := a[r][col] / a[col][col]
			for c := col; c < n; c++ {
				a[r][c] -= f * a[col][c]
			}
			b[r] -= f * b[col]
		}
	}
	var x [4]float64
	for r := n - 1; r >= 0; r-- {
		s := b[r]
		for c := r + 1; c < n; c++ {
			s -= a[r][c] * x[c]
		}
		x[r] = s / a[r][r]
	}
	return x, true
}
