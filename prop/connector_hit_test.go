package prop_test

import "testing"

// TestConnectorMaxHitFromSeeds1And2: with NixlConnector attached and
// #44243's local hit (v0.22 without #48425) the search finds the stale
// Mamba read from search seeds 1 and 2; v0.22 as released (#48425's
// fallback to the common hit) and v0.28 (#50344) are clean over both
// seeds' scenarios. bugtable runs the twin over 10,000.
func TestConnectorMaxHitFromSeeds1And2(t *testing.T) {
	p := property(t, "stale-slot-read")
	for _, seed := range []int64{1, 2} {
		res := searchShared(t, connectorMaxHit(), p, seed, 2000)
		if res.Holds {
			t.Errorf("seed %d: v0.22-48425 with NixlConnector found no stale read", seed)
		}
		released := connectorMaxHit()
		released.Patches = nil
		if res := searchShared(t, released, p, seed, 2000); !res.Holds {
			t.Errorf("seed %d: v0.22 as released reads a stale state: %v", seed, res.Err)
		}
		v028 := connectorMaxHit()
		v028.Patches, v028.Versions = nil, []string{"v0.28"}
		if res := searchShared(t, v028, p, seed, 2000); !res.Holds {
			t.Errorf("seed %d: v0.28 reads a stale state: %v", seed, res.Err)
		}
	}
}
