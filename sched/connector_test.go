package sched

import "testing"

// The local hit per release under a connector, with vLLM's own cases for
// #50344 (test_hybrid_fa_deeper_hit_respects_connector_lookup_policy,
// tests/v1/core/test_scheduler.py @ d6941300f): a capable connector
// keeps the deeper attention hit when external tokens back it, an
// external miss or an incapable connector takes the common hit.
func TestConnectorLocalHitMax(t *testing.T) {
	v2244, err := Patched(V022, []string{"-48425"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		v    Version
		conn Connector
		ext  int
		want bool
	}{
		{V019, ConnectorNixl, 0, false},
		{V019, ConnectorNixl, 16, false},
		{v2244, ConnectorNixl, 0, true},
		{v2244, ConnectorOffloading, 0, true},
		{v2244, ConnectorNone, 0, false},
		{V022, ConnectorNixl, 0, false},
		{V022, ConnectorOffloading, 16, true},
		{V028, ConnectorNixl, 0, false},
		{V028, ConnectorNixl, 16, true},
		{V028, ConnectorOffloading, 16, false},
		{V031, ConnectorOffloading, 16, false},
	} {
		if got := c.v.Behaviour().ConnectorHit.LocalHitMax(c.conn, c.ext); got != c.want {
			t.Errorf("%s, %s, %d external tokens: max over groups %v, want %v", c.v, c.conn, c.ext, got, c.want)
		}
	}
	if _, err := ParseConnector("lmcache"); err == nil {
		t.Error("ParseConnector(lmcache): want an error (the registry name is LMCacheConnectorV1)")
	}
	for c := ConnectorNone; c <= ConnectorLMCache; c++ {
		if got, err := ParseConnector(c.String()); err != nil || got != c {
			t.Errorf("ParseConnector(%q) = %v, %v", c.String(), got, err)
		}
	}
}
