package prop_test

import (
	"testing"

	"statesim/internal/testtier"
	"statesim/prop"
)

// foundOnlyWithTheBug requires the stale-slot-read search over bug to
// fail from search seeds 1 and 2, and over each of clean (the same search
// at a fix) to hold over both seeds' scenarios. bugtable runs the fixes
// over 10,000.
func foundOnlyWithTheBug(t *testing.T, bug prop.Config, clean map[string]prop.Config) {
	t.Helper()
	p := property(t, "stale-slot-read")
	for _, seed := range []int64{1, 2} {
		if res := searchShared(t, bug, p, seed, 2000); res.Holds {
			t.Errorf("seed %d: no stale read found", seed)
		}
		for name, c := range clean {
			if res := searchShared(t, c, p, seed, 2000); !res.Holds {
				t.Errorf("seed %d: %s reads a stale state: %v", seed, name, res.Err)
			}
		}
	}
}

// With closed PR #47491 the search finds the attention-only hit's stale
// read; the release as shipped (the hybrid hit is the minimum over
// groups) is clean.
func TestAttentionOnlyHitFromSeeds1And2(t *testing.T) {
	released := attnOnlyHit()
	released.Patches = nil
	foundOnlyWithTheBug(t, attnOnlyHit(), map[string]prop.Config{"the release as shipped": released})
}

// With NixlConnector attached and #44243's local hit (v0.22 without
// #48425) the search finds the stale Mamba read; v0.22 as released
// (#48425's fallback to the common hit) and v0.28 (#50344) are clean.
func TestConnectorMaxHitFromSeeds1And2(t *testing.T) {
	released := connectorMaxHit()
	released.Patches = nil
	v028 := connectorMaxHit()
	v028.Patches, v028.Versions = nil, []string{"v0.28"}
	foundOnlyWithTheBug(t, connectorMaxHit(), map[string]prop.Config{"v0.22 as released": released, "v0.28": v028})
}

// With a DFlash drafter whose sliding-window group is smaller than the
// Mamba group's, Model Runner V2's add_request seed reads past a prefix
// hit from seeds 1 and 2 (#53142, #55600); with #53798 (the Mamba block
// as the divisor) the same searches are clean: 200 scenarios a seed here
// (its 8800-token prompts cost), 2000 in the long tier, 10,000 in
// bugtable.
func TestV2SeedUnitsFromSeeds1And2(t *testing.T) {
	p := property(t, "stale-slot-read")
	fixed := v2SeedUnits()
	fixed.Patches = []string{"+53798"}
	for _, seed := range []int64{1, 2} {
		if res := searchShared(t, v2SeedUnits(), p, seed, 2000); res.Holds {
			t.Errorf("seed %d: no stale read found", seed)
		}
		res, err := prop.Check(prop.NewRunner(t.TempDir(), nil), fixed, p, prop.Options{Seed: seed, Trials: testtier.Sized(200, 2000)})
		if err != nil || !res.Holds {
			t.Errorf("seed %d: +53798 reads a stale state: %v %v", seed, err, res.Err)
		}
	}
}
