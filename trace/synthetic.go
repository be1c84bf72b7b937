package trace

import (
	"io"
	"math"
	"math/rand/v2"
)

// Log-space spreads of the Azure conversation trace's lengths (prompt 0.99,
// output 0.86), so synthetic load has its skew, not just its medians.
const (
	promptSigma = 1.0
	outputSigma = 0.86
	maxSynthLen = 32768
)

type synthetic struct {
	rng                *rand.Rand
	n, i               int
	meanGap            float64
	promptMu, outputMu float64 // log medians
	at                 int64
}

// Synthetic returns n requests generated on demand from seed: the first
// arrives at 0, gaps are exponential with mean meanGapNS (Poisson arrivals),
// and prompt and output lengths are lognormal around the given medians,
// clamped to [1, 32768]. The same arguments give the same trace. A negative
// gap counts as 0 and a median below 1 as 1.
func Synthetic(n int, seed uint64, meanGapNS int64, promptMedian, outputMedian int) Reader {
	return &synthetic{
		rng:      rand.New(rand.NewPCG(seed, 0x7472616365)), // stream "trace"
		n:        n,
		meanGap:  float64(max(meanGapNS, 0)),
		promptMu: math.Log(float64(max(promptMedian, 1))),
		outputMu: math.Log(float64(max(outputMedian, 1))),
	}
}

func (s *synthetic) Next() (Record, error) {
	if s.i >= s.n {
		return Record{}, io.EOF
	}
	if s.i > 0 {
		g := math.Round(s.rng.ExpFloat64() * s.meanGap)
		if g >= math.MaxInt64 || int64(g) > math.MaxInt64-s.at {
			s.at = math.MaxInt64 // saturate rather than wrap to the past
		} else {
			s.at += int64(g)
		}
	}
	s.i++
	return Record{
		Line:         s.i,
		ArrivalNS:    s.at,
		PromptTokens: s.length(s.promptMu, promptSigma),
		OutputTokens: s.length(s.outputMu, outputSigma),
	}, nil
}

func (s *synthetic) length(mu, sigma float64) int {
	v := math.Round(math.Exp(mu + sigma*s.rng.NormFloat64()))
	return int(min(max(v, 1), maxSynthLen))
}
