package sim

import (
	"hash/fnv"
	"math/rand/v2"
)

// Streams derives independent, reproducible RNG streams from one master
// seed. Each subsystem asks for its stream by name, so adding a new consumer
// never shifts the numbers another subsystem sees.
type Streams struct{ seed uint64 }

// NewStreams returns the stream factory for a master seed.
func NewStreams(seed uint64) Streams { return Streams{seed: seed} }

// Seed is the master seed.
func (s Streams) Seed() uint64 { return s.seed }

// Stream returns a fresh generator for the named subsystem.
func (s Streams) Stream(name string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(name))
	return rand.New(rand.NewPCG(s.seed, Mix(h.Sum64())))
}

// Mix is splitmix64's finaliser: a cheap, well-distributed hash of a word,
// used to derive per-request seeds without drawing from a shared stream.
func Mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
