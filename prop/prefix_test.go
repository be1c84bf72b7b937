package prop

import (
	"strings"
	"testing"
)

// Prefix-sharing scenarios with Mamba cache modes. The search finds the
// align-mode stall (a long_prefill_token_threshold below the Mamba block
// rounds every chunk to 0) and shrinks it to one request; with the
// threshold off the same modes keep every state read and the block
// counts honest over the shared prefixes (a small search: the big runs
// are in docs/bugs.md).
func TestPrefixSearch(t *testing.T) {
	r := NewRunner(t.TempDir(), nil)
	c := Prefix(BugA("v0.31"), 64, 3, "align", "all", "on")
	c.Presets = []string{"tiny-hybrid"}
	// Long-prefill thresholds below the block included: v0.31 advances
	// inside the block (#50000), so nothing stalls.
	if res := gdnSearchWith(t, r, c, "liveness", 100); !res.Holds {
		t.Errorf("liveness: %v on %s", res.Err, res.Shrunk)
	}
	c.MaxLongPrefill = 0
	for _, p := range []string{"stale-slot-read", "conservation", "liveness"} {
		if res := gdnSearchWith(t, r, c, p, 40); !res.Holds {
			t.Errorf("%s: %v on %s", p, res.Err, res.Shrunk)
		}
	}
	// The generated scenarios do share prefixes and cache them.
	sharedRuns := 0
	for i := int64(0); i < 20; i++ {
		p := Sample(c, i)
		if !p.shares() {
			continue
		}
		if o := r.Run(p); o.Err == nil && o.Report.PrefixCache != nil && o.Report.PrefixCache.HitTokens > 0 {
			sharedRuns++
		}
		if !strings.Contains(p.String(), "shared prefixes") {
			t.Errorf("description without its shared prefixes: %s", p)
		}
	}
	if sharedRuns == 0 {
		t.Error("no generated scenario hit a shared prefix")
	}
}

// Under MTP/EAGLE in align mode the speculative blocks are the tables'
// last K positions (BlockTable.Spec mirrors them): the holdings the
// conservation property checks name each block once.
func TestSpecAlignConservation(t *testing.T) {
	r := NewRunner(t.TempDir(), nil)
	c := Prefix(Spec(GDN("v0.19", "tiny-hybrid"), 1, 4, "mtp", "eagle"), 64, 3, "align")
	c.SpecAlign, c.MaxLongPrefill = true, 0
	c.Async = []bool{false, true}
	c.Patches = []string{"+55898", "+48375"}
	if res := gdnSearchWith(t, r, c, "conservation", 40); !res.Holds {
		t.Errorf("%v on %s", res.Err, res.Shrunk)
	}
}
