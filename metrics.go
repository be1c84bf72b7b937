package statesim

import (
	"math"
	"sort"

	"statesim/sched"
	"statesim/sim"
)

// metrics collects latency samples (seconds) for the report.
type metrics struct {
	ttft, itl, e2e, queue []float64
	maxRunning            int
	rowSteps              int64
}

func (m *metrics) step(out *sched.Output, now sim.Time) {
	n := len(out.Rows)
	if n > m.maxRunning {
		m.maxRunning = n
	}
	m.rowSteps += int64(n)
	for i := range out.Rows {
		// A row with nothing computed and never preempted is a request's
		// first scheduling: its queueing delay ends here.
		if r := out.Rows[i].Req; out.Rows[i].NumComputed == 0 && r.NumPreemptions == 0 {
			m.queue = append(m.queue, (now - r.ArrivalTime).Seconds())
		}
	}
}

func (m *metrics) finish(r *sched.Request) {
	m.ttft = append(m.ttft, (r.FirstTokenTime - r.ArrivalTime).Seconds())
	m.e2e = append(m.e2e, (r.FinishTime - r.ArrivalTime).Seconds())
	if r.NumOutputTokens > 1 {
		m.itl = append(m.itl, (r.LastTokenTime-r.FirstTokenTime).Seconds()/float64(r.NumOutputTokens-1))
	}
}

// Percentiles summarises a latency distribution in milliseconds.
type Percentiles struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P99   float64 `json:"p99_ms"`
	Max   float64 `json:"max_ms"`
}

func percentiles(xs []float64) Percentiles {
	if len(xs) == 0 {
		return Percentiles{}
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	q := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(s)))) - 1
		return round3(s[max(i, 0)] * 1e3)
	}
	return Percentiles{Count: len(s), P50: q(0.5), P90: q(0.9), P99: q(0.99), Max: round3(s[len(s)-1] * 1e3)}
}

// round3 keeps reports short and stable: microsecond resolution in ms.
func round3(x float64) float64 { return math.Round(x*1e3) / 1e3 }
