package engine

import (
	"math"
	"statesim/report"

	"statesim/sched"
	"statesim/sim"
	"statesim/sketch"
)

// metrics streams latencies (seconds) into quantile sketches for the
// report: memory is fixed however long the run, and every percentile is
// within sketch.Alpha (0.1%) of the exact one; counts and maxima are exact.
type metrics struct {
	ttft, itl, e2e, queue sketch.Sketch
	maxRunning            int
	rowSteps              int64

	// Output tokens per second over 1 s windows of simulated time.
	rate       sketch.Sketch
	win        int64 // current window
	winTokens  int64 // tokens sampled in it so far
	stepTokens int64 // tokens the running step samples when it ends
	// scheduledTokens: what the last step measured will sample; the
	// runner moves it to stepTokens when that step is the one running.
	scheduledTokens int64
}

// window is the throughput window.
const window = sim.Second

// tokens records the running step's tokens, sampled at its end, now.
func (m *metrics) tokens(now sim.Time) {
	// A cheap test before dividing, as this runs once per step (a product
	// that overflows only sends it to the exact loop).
	if sim.Time(m.win+1)*window <= now {
		for w := int64(now / window); m.win < w; m.win++ {
			m.rate.Add(float64(m.winTokens) / window.Seconds())
			m.winTokens = 0
		}
	}
	m.winTokens += m.stepTokens
	m.stepTokens = 0
}

// closeRate ends the last, partial window at the end of the run.
func (m *metrics) closeRate(end sim.Time) {
	m.tokens(end)
	if d := end - sim.Time(m.win)*window; d > 0 {
		m.rate.Add(float64(m.winTokens) / d.Seconds())
	}
}

func ratePercentiles(s *sketch.Sketch) report.RatePercentiles {
	if s.Count() == 0 {
		return report.RatePercentiles{}
	}
	q := func(p float64) float64 { return round3(s.Quantile(p)) }
	return report.RatePercentiles{Windows: int(s.Count()), P10: q(0.1), P50: q(0.5), P90: q(0.9), Max: round3(s.Max())}
}

// step records a step and measures its load for the step-time model, in
// one pass over the rows (see LoadOf).
func (m *metrics) step(out *sched.Output, now sim.Time, stateBytes int64) StepLoad {
	n := len(out.Rows)
	if n > m.maxRunning {
		m.maxRunning = n
	}
	m.rowSteps += int64(n)
	l := StepLoad{StateBytes: stateBytes}
	m.scheduledTokens = 0
	for i := range out.Rows {
		row := &out.Rows[i]
		c, q := row.NumComputed, row.NumScheduled
		if q == 1 && c > 0 {
			l.DecodeRows++
		} else {
			l.PrefillTokens += int64(q)
			// A row with nothing computed and never preempted is a
			// request's first scheduling: its queueing delay ends here.
			if r := row.Req; c == 0 && r.NumPreemptions == 0 {
				m.queue.Add((now - r.ArrivalTime).Seconds())
			}
		}
		l.ContextTokens += int64(c + q)
		// Update samples a token for every row that ends its known tokens.
		if row.Samples {
			m.scheduledTokens++
		}
	}
	return l
}

func (m *metrics) finish(r *sched.Request) {
	m.ttft.Add((r.FirstTokenTime - r.ArrivalTime).Seconds())
	m.e2e.Add((r.FinishTime - r.ArrivalTime).Seconds())
	if r.NumOutputTokens > 1 {
		m.itl.Add((r.LastTokenTime - r.FirstTokenTime).Seconds() / float64(r.NumOutputTokens-1))
	}
}

func percentiles(s *sketch.Sketch) report.Percentiles {
	if s.Count() == 0 {
		return report.Percentiles{}
	}
	q := func(p float64) float64 { return round3(s.Quantile(p) * 1e3) }
	return report.Percentiles{Count: int(s.Count()), P50: q(0.5), P90: q(0.9), P99: q(0.99), Max: round3(s.Max() * 1e3)}
}

// round3 keeps reports short and stable: microsecond resolution in ms.
func round3(x float64) float64 { return math.Round(x*1e3) / 1e3 }

// decodes records a steady decode step of n rows ending at end, as step
// and tokens would: every row samples a token and none starts.
func (m *metrics) decodes(n int64, end sim.Time) {
	m.rowSteps += n
	m.stepTokens = n
	m.tokens(end)
}
