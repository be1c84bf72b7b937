package statecache

import (
	"fmt"
	"math"

	"statesim/model"
)

// gib is 2^30 bytes.
const gib = 1 << 30

// Memory is the device memory budget vLLM profiles at start-up.
type Memory struct {
	DeviceGiB            float64 // total device memory
	GPUMemoryUtilization float64 // fraction vLLM may use
	WeightsGiB           float64
	ActivationGiB        float64 // peak activation memory from the profile run
}

// NumGPUBlocks is (utilization × device − weights − activations) over the
// bytes one block id costs across raw tensors (page size × group size).
func (m Memory) NumGPUBlocks(blockBytes int64) (int, error) {
	if blockBytes <= 0 {
		return 0, fmt.Errorf("memory model: block size in bytes must be > 0")
	}
	avail := m.GPUMemoryUtilization*m.DeviceGiB - m.WeightsGiB - m.ActivationGiB
	if avail <= 0 {
		return 0, fmt.Errorf("memory model: no memory left for the cache: %.3g × %.4g GiB − %.4g GiB weights − %.4g GiB activations = %.4g GiB",
			m.GPUMemoryUtilization, m.DeviceGiB, m.WeightsGiB, m.ActivationGiB, avail)
	}
	n := math.Floor(avail * gib / float64(blockBytes))
	if n > math.MaxInt32 {
		return 0, fmt.Errorf("memory model: %g blocks exceeds the supported 2^31", n)
	}
	if n < 2 {
		return 0, fmt.Errorf("memory model: %.4g GiB for the cache holds %d blocks of %d bytes; need at least 2", avail, int(n), blockBytes)
	}
	return int(n), nil
}

// HostBytesPerBlock is what the simulator allocates up front per block id
// of the pool: the free queue (int32) and holder (RequestID) of
// BlockPool. The symbolic backend's records (Provenance and lease owner,
// RecordBytesPerBlock) are allocated in pages as blocks are first used,
// so they follow what a run touches, not the pool size.
// TestHostBytesPerBlock measures both.
const (
	HostBytesPerBlock   = 4 + 8
	RecordBytesPerBlock = 32 + 8
)

// Footprint is an estimate of the host memory one run allocates up front,
// made before anything is allocated so that an impossible configuration
// is refused with a message instead of dying in the allocator.
type Footprint struct {
	// Pool is the block pool, allocated whole at start-up (the
	// symbolic backend's records grow with the blocks used).
	Pool int64
	// Caches is the numeric backend's float32 cache tensors (0 for the
	// symbolic backend): the real cache's size, block bytes × blocks.
	Caches int64
	// Prefix is what prefix caching adds to the pool
	// (PrefixCachingHostBytes), 0 without it.
	Prefix int64
}

// Total is the whole estimate in bytes.
func (f Footprint) Total() int64 { return f.Pool + f.Caches + f.Prefix }

// EstimateFootprint sizes a run over numBlocks blocks of blockBytes each;
// numeric is true for backends that hold the cache contents (mock, cuda's
// host-side shadow).
func EstimateFootprint(numBlocks int, blockBytes int64, numeric bool) Footprint {
	f := Footprint{Pool: int64(numBlocks) * HostBytesPerBlock}
	if numeric {
		f.Caches = int64(numBlocks) * blockBytes
	}
	return f
}

// WithPrefixCaching adds prefix caching's bookkeeping for numBlocks
// blocks to the estimate.
func (f Footprint) WithPrefixCaching(numBlocks int) Footprint {
	f.Prefix = PrefixCachingHostBytes(numBlocks)
	return f
}

// GiB formats bytes as GiB for messages.
func GiB(b int64) float64 { return float64(b) / gib }

// MaxModelLenFits is vLLM's start-up check (check_enough_kv_cache_memory
// in vllm/v1/core/kv_cache_utils.py): one request at max_model_len must
// fit the cache. A request holds, per attention group, one block per
// blockSize tokens, and one block per Mamba group (no Mamba prefix
// caching); block 0 is reserved. It returns the blocks one such request
// needs and the longest max_model_len the pool holds (0 when not even the
// state blocks fit; -1 when there is no attention, so any length fits).
func MaxModelLenFits(l *model.Layout, numBlocks, maxModelLen int) (need int64, longest int64) {
	na, nm := int64(l.NumAttnGroups()), int64(l.NumMambaGroups())
	bs := int64(l.BlockSize)
	need = na*((int64(maxModelLen)+bs-1)/bs) + nm
	usable := int64(numBlocks) - 1
	if na == 0 {
		return need, -1
	}
	if usable < nm {
		return need, 0
	}
	return need, (usable - nm) / na * bs
}
