package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Dist is a token-length distribution as written in a scenario:
// constant (value), uniform (min..max inclusive), lognormal (median,
// sigma, clamped to min..max), or trace (lengths come from the trace file).
type Dist struct {
	Kind   string  `yaml:"dist" json:"dist"`
	Value  int     `yaml:"value,omitempty" json:"value,omitempty"`
	Min    int     `yaml:"min,omitempty" json:"min,omitempty"`
	Max    int     `yaml:"max,omitempty" json:"max,omitempty"`
	Median float64 `yaml:"median,omitempty" json:"median,omitempty"`
	Sigma  float64 `yaml:"sigma,omitempty" json:"sigma,omitempty"`
}

// Validate checks the parameters; errors are "field: problem".
func (d *Dist) Validate(allowTrace bool) error {
	switch d.Kind {
	case "constant":
		if d.Value < 1 {
			return fmt.Errorf("value: must be >= 1, got %d", d.Value)
		}
	case "uniform":
		if d.Min < 1 {
			return fmt.Errorf("min: must be >= 1, got %d", d.Min)
		}
		if d.Max < d.Min {
			return fmt.Errorf("max: must be >= min (%d), got %d", d.Min, d.Max)
		}
	case "lognormal":
		if d.Median < 1 {
			return fmt.Errorf("median: must be >= 1, got %g", d.Median)
		}
		if d.Sigma < 0 || d.Sigma > 10 {
			return fmt.Errorf("sigma: must be in [0, 10], got %g", d.Sigma)
		}
		if d.Min < 1 {
			return fmt.Errorf("min: must be >= 1, got %d", d.Min)
		}
		if d.Max < d.Min {
			return fmt.Errorf("max: must be >= min (%d), got %d", d.Min, d.Max)
		}
	case "trace":
		if !allowTrace {
			return fmt.Errorf("dist: \"trace\" is only valid with workload kind trace")
		}
	case "":
		return fmt.Errorf("dist: missing (want constant, uniform, lognormal or trace)")
	default:
		return fmt.Errorf("dist: unknown %q (want constant, uniform, lognormal or trace)", d.Kind)
	}
	return nil
}

// MaxValue is the largest length the distribution can produce (0 = from trace).
func (d *Dist) MaxValue() int {
	switch d.Kind {
	case "constant":
		return d.Value
	case "uniform", "lognormal":
		return d.Max
	}
	return 0
}

// Draw samples one length.
func (d *Dist) Draw(r *rand.Rand) int {
	switch d.Kind {
	case "constant":
		return d.Value
	case "uniform":
		return d.Min + r.IntN(d.Max-d.Min+1)
	case "lognormal":
		v := int(math.Round(d.Median * math.Exp(d.Sigma*r.NormFloat64())))
		return min(max(v, d.Min), d.Max)
	}
	return 0
}
