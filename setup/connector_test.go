package setup_test

import (
	"errors"
	"strings"
	"testing"

	"statesim/scenarios"
	"statesim/setup"
)

// connectorScenario is good at version with patches and kv_connector c,
// prefix caching on in align mode.
func connectorScenario(version, patches, c string) string {
	y := strings.Replace(good, "  vllm_version: v0.14\n", "  vllm_version: "+version+"\n  patches: "+patches+
		"\n  enable_prefix_caching: true\n  mamba_cache_mode: align\n  kv_transfer_config:\n    kv_connector: "+c+"\n", 1)
	return y
}

// The connector's local hit keeps the deepest group's hit only where
// #44243 is in and #48425 is not; every other release and connector, and
// no connector at all, take the common hit.
func TestConnectorMaxHitPerRelease(t *testing.T) {
	for _, c := range []struct {
		version, patches, conn string
		max                    bool
	}{
		{"v0.19", "[]", "NixlConnector", false},
		{"v0.22", "[]", "NixlConnector", false},
		{"v0.22", "[-48425]", "NixlConnector", true},
		{"v0.22", "[-48425]", "OffloadingConnector", true},
		{"v0.22", "[-48425]", `""`, false},
		{"v0.19", "[+44243]", "OffloadingConnector", true},
		{"v0.28", "[]", "NixlConnector", false},
		{"v0.28", "[-50344]", "OffloadingConnector", false},
	} {
		st, err := setup.Parse([]byte(connectorScenario(c.version, c.patches, c.conn)), "t.yaml", nil)
		if err != nil {
			t.Errorf("%s %s %s: %v", c.version, c.patches, c.conn, err)
			continue
		}
		if st.Cache.ConnectorMaxHit != c.max {
			t.Errorf("%s %s %s: local hit max over groups %v, want %v", c.version, c.patches, c.conn, st.Cache.ConnectorMaxHit, c.max)
		}
	}
}

// A connector vLLM cannot run on the model, on the v0 control, or by an
// unknown name is refused at its field.
func TestConnectorRefusals(t *testing.T) {
	for _, c := range []struct{ version, conn, want string }{
		{"v0.22", "LMCacheConnectorV1", "t.yaml:9: field engine.kv_transfer_config.kv_connector: LMCacheConnectorV1 does not support the hybrid KV cache manager"},
		{"v0.22", "Lmcache", `t.yaml:9: field engine.kv_transfer_config.kv_connector: unknown kv_connector "Lmcache"`},
		{"v0", "NixlConnector", "t.yaml:7: field engine.kv_transfer_config.kv_connector: KV connectors are modelled for V1 releases"},
	} {
		y := connectorScenario(c.version, "[]", c.conn)
		if c.version == "v0" {
			y = strings.Replace(y, "  enable_prefix_caching: true\n  mamba_cache_mode: align\n", "", 1)
		}
		_, err := setup.Parse([]byte(y), "t.yaml", nil)
		var ie *scenarios.InputError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s:\n got  %v\n want %s", c.version, c.conn, err, c.want)
		}
	}
	// LMCache on an attention-only model is no hybrid: it runs.
	y := strings.Replace(connectorScenario("v0.22", "[]", "LMCacheConnectorV1"), "tiny-hybrid", "tiny-attention", 1)
	y = strings.Replace(y, "  mamba_cache_mode: align\n", "", 1)
	if _, err := setup.Parse([]byte(y), "t.yaml", nil); err != nil {
		t.Errorf("LMCache on an attention-only model: %v", err)
	}
}
