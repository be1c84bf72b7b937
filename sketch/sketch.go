package sketch

import "math"

// Alpha is the relative-error bound of every quantile.
const Alpha = 0.001

// MinValue is the smallest sample kept in a bucket; smaller ones (zero
// queueing delays) count in the zero bucket.
const MinValue = 1e-9

var (
	gamma       = (1 + Alpha) / (1 - Alpha)
	invLogGamma = 1 / math.Log(gamma)
)

// Sketch is a quantile sketch of non-negative samples. The zero value is
// an empty sketch.
type Sketch struct {
	counts   []uint64 // counts[i] is bucket offset+i
	offset   int
	zeros    uint64
	n        uint64
	min, max float64
}

// index is the bucket of x >= MinValue: the i with γ^(i-1) < x ≤ γ^i.
func index(x float64) int { return int(math.Ceil(math.Log(x) * invLogGamma)) }

// value is bucket i's representative, within Alpha of every x in it.
func value(i int) float64 { return 2 * math.Pow(gamma, float64(i)) / (gamma + 1) }

// Add records one sample; negative and NaN samples count as zero.
func (s *Sketch) Add(x float64) {
	if !(x >= 0) {
		x = 0
	}
	if s.n == 0 || x < s.min {
		s.min = x
	}
	if x > s.max {
		s.max = x
	}
	s.n++
	if x < MinValue {
		s.zeros++
		return
	}
	i := index(x)
	s.grow(i)
	s.counts[i-s.offset]++
}

// Count is the number of samples.
func (s *Sketch) Count() uint64 { return s.n }

// Min and Max are the exact extremes (0 when empty).
func (s *Sketch) Min() float64 { return s.min }
func (s *Sketch) Max() float64 { return s.max }

// Quantile returns the ceil(q·n)-th smallest sample to within Alpha
// (q in [0, 1]; 0 when empty). The result is clamped to [Min, Max], which
// only tightens it.
func (s *Sketch) Quantile(q float64) float64 {
	if s.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(s.n)))
	rank = max(rank, 1)
	if rank <= s.zeros {
		return 0
	}
	seen := s.zeros
	for i, c := range s.counts {
		seen += c
		if seen >= rank {
			return min(max(value(s.offset+i), s.min), s.max)
		}
	}
	return s.max
}

// Merge adds every sample of o to s.
func (s *Sketch) Merge(o *Sketch) {
	if o.n == 0 {
		return
	}
	if s.n == 0 || o.min < s.min {
		s.min = o.min
	}
	s.max = max(s.max, o.max)
	s.n += o.n
	s.zeros += o.zeros
	for i, c := range o.counts {
		if c == 0 {
			continue
		}
		k := o.offset + i
		s.grow(k)
		s.counts[k-s.offset] += c
	}
}

// grow makes bucket k addressable.
func (s *Sketch) grow(k int) {
	switch {
	case len(s.counts) == 0:
		s.offset = k
		s.counts = append(s.counts, 0)
	case k < s.offset:
		g := s.offset - k
		s.counts = append(s.counts, make([]uint64, g)...)
		copy(s.counts[g:], s.counts)
		clear(s.counts[:g])
		s.offset = k
	case k >= s.offset+len(s.counts):
		s.counts = append(s.counts, make([]uint64, k-s.offset-len(s.counts)+1)...)
	}
}
