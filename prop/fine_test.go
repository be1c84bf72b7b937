package prop

import "testing"

// TestFineGrainedSearch: over prompts sharing 8-token prefixes with
// prefix_match_unit 8 (a Mamba align block of 32), hits end inside
// blocks and partial tails are published and moved, and the properties
// hold at v0.31: the copies-on-write carry what the readers need.
func TestFineGrainedSearch(t *testing.T) {
	r := NewRunner(t.TempDir(), nil)
	c := Prefix(GDN("v0.31", "tiny-hybrid-mamba2"), 8, 6, "align")
	c.PrefixMatchUnit = 8
	for _, p := range []string{"stale-slot-read", "conservation", "liveness"} {
		if res := gdnSearchWith(t, r, c, p, 200); !res.Holds {
			t.Errorf("%s: %v on %s", p, res.Err, res.Shrunk)
		}
	}
	var copies, moves int64
	for i := int64(0); i < 40; i++ {
		p := Sample(c, i)
		if o := r.Run(p); o.Err == nil && o.Report.PrefixCache != nil {
			copies += o.Report.PrefixCache.PartialHitCopies
			moves += o.Report.PrefixCache.PartialTailMoves
		}
	}
	if copies == 0 || moves == 0 {
		t.Errorf("over 40 scenarios: %d partial-hit copies, %d partial-tail moves; want both", copies, moves)
	}
}
