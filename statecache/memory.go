package statecache

import (
	"fmt"
	"math"
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
