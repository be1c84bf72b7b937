package sim

import "fmt"

// Time is simulated time in integer nanoseconds since the start of a run.
type Time int64

// Common durations.
const (
	Nanosecond  Time = 1
	Microsecond      = 1000 * Nanosecond
	Millisecond      = 1000 * Microsecond
	Second           = 1000 * Millisecond
)

// Seconds returns t as floating-point seconds (for reports only).
func (t Time) Seconds() float64 { return float64(t) / float64(Second) }

// FromSeconds converts seconds to Time, rounding to the nearest nanosecond.
func FromSeconds(s float64) Time {
	if s < 0 {
		return Time(s*float64(Second) - 0.5)
	}
	return Time(s*float64(Second) + 0.5)
}

func (t Time) String() string { return fmt.Sprintf("%.6fs", t.Seconds()) }
