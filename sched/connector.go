package sched

import (
	"fmt"
	"strings"
)

// Connector is the KV connector engine.kv_transfer_config names
// (kv_connector, by vLLM's registry name in
// vllm/distributed/kv_transfer/kv_connector/factory.py). statesim models
// only what the scheduler's local prefix lookup does with one attached:
// the external store holds nothing the local cache lacks, so its
// get_num_new_matched_tokens is 0 (docs/model.md, "KV connectors on
// hybrids").
type Connector uint8

const (
	ConnectorNone Connector = iota
	// ConnectorNixl: NixlConnector. SupportsHMA, and from #50344 the one
	// in-tree connector whose supports_divergent_local_hybrid_hits is
	// true (nixl/connector.py @ d6941300f): it sends the Mamba state
	// with every transfer (_apply_prefix_caching, nixl/worker.py).
	ConnectorNixl
	// ConnectorOffloading: OffloadingConnector. SupportsHMA, saves each
	// group's blocks per chunk (one Mamba state a chunk), and keeps the
	// base class's supports_divergent_local_hybrid_hits = False.
	ConnectorOffloading
	// ConnectorLMCache: LMCacheConnectorV1. Not SupportsHMA
	// (lmcache_connector.py @ 6adad0876), so vLLM turns the hybrid KV
	// cache manager off, which a Mamba hybrid cannot run without
	// (vllm/config/vllm.py @ 6adad0876): refused on hybrids.
	ConnectorLMCache
)

var connectorNames = []string{ConnectorNone: "", ConnectorNixl: "NixlConnector",
	ConnectorOffloading: "OffloadingConnector", ConnectorLMCache: "LMCacheConnectorV1"}

func (c Connector) String() string { return connectorNames[c] }

// ParseConnector reads a kv_connector name; "" is no connector.
func ParseConnector(s string) (Connector, error) {
	for i, n := range connectorNames {
		if s == n {
			return Connector(i), nil
		}
	}
	return 0, fmt.Errorf("unknown kv_connector %q (known: %s)", s, strings.Join(connectorNames[1:], ", "))
}

// SupportsHMA is whether the connector subclasses SupportsHMA
// (kv_connector/v1/base.py): without it vLLM disables the hybrid KV
// cache manager.
func (c Connector) SupportsHMA() bool { return c == ConnectorNixl || c == ConnectorOffloading }

// DivergentHits is supports_divergent_local_hybrid_hits (#50344).
func (c Connector) DivergentHits() bool { return c == ConnectorNixl }

// ConnectorHit is the scheduler's local prefix lookup for a new request
// when a KV connector is attached to a hybrid (Mamba + full attention)
// model, per release (scheduler.py, Scheduler.schedule).
type ConnectorHit uint8

const (
	// ConnectorHitCommon: get_computed_blocks, the hit every group
	// agrees on (the minimum), as without a connector (before #44243).
	ConnectorHitCommon ConnectorHit = iota
	// ConnectorHitMax: #44243 (55911db58): any connector on a hybrid
	// takes max(per_group_hits) of find_longest_cache_hit_per_group,
	// relying on the connector to supply the Mamba state there.
	ConnectorHitMax
	// ConnectorHitReconcile: #48425 (229e01e9e): the per-group lookup
	// for any connector, but a hit deeper than a lagging group with no
	// external tokens falls back to get_computed_blocks.
	ConnectorHitReconcile
	// ConnectorHitCapable: #50344 (d6941300f): the per-group lookup
	// only for a connector with supports_divergent_local_hybrid_hits.
	ConnectorHitCapable
)

// LocalHitMax reports whether a new request's local hit is the deepest
// group's (max over groups) rather than the common one, for connector c
// whose external hit is ext tokens. Only #44243's rule keeps a max hit
// that no external tokens back; later rules reconcile it.
func (h ConnectorHit) LocalHitMax(c Connector, ext int) bool {
	if c == ConnectorNone {
		return false
	}
	switch h {
	case ConnectorHitMax:
		return true
	case ConnectorHitReconcile:
		return ext > 0
	case ConnectorHitCapable:
		return ext > 0 && c.DivergentHits()
	}
	return false
}
