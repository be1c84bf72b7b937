package sched

import (
	"testing"

	"statesim/statecache"
)

// A step's output carries only the copies its own Schedule took: the
// Output is reused (every step, or every other one under async
// scheduling), and a copy left over from an earlier step would run again.
func TestBlockCopiesAreTheStepsOwn(t *testing.T) {
	cfg := Config{MaxNumBatchedTokens: 64, MaxNumSeqs: 8, MaxModelLen: 1000, EnableChunkedPrefill: true}
	for _, c := range []struct {
		name  string
		async bool
		pc    bool
	}{{"sync", false, false}, {"async", true, false}, {"sync, prefix caching", false, true}, {"async, prefix caching", true, true}} {
		t.Run(c.name, func(t *testing.T) {
			cfg := cfg
			cfg.AsyncScheduling = c.async
			s := newTestSched(t, cfg, Fixed, 64)
			if c.pc {
				s = newPrefixSched(t, cfg, 64, 32)
			}
			for i := range 4 {
				addReq(s, i, 40, 8)
			}
			var inFlight *Output
			for step := range 12 {
				out, err := s.Schedule(0)
				if err != nil {
					t.Fatal(err)
				}
				if len(out.BlockCopies) != 0 {
					t.Fatalf("step %d carries copies it did not take: %+v", out.Step, out.BlockCopies)
				}
				// What a producer would have queued, for the next reuse.
				out.BlockCopies = append(out.BlockCopies, statecache.BlockCopy{Src: 1, Dst: 2, Tokens: int32(step)})
				if c.async {
					out, inFlight = inFlight, out
					if out == nil {
						continue
					}
				}
				if _, err := s.Update(out, 0); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
