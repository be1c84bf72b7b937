package scenarios

import (
	"sort"
	"strings"
)

// knownDevices is the memory torch.cuda reports for common accelerators,
// in GiB (2^30 bytes), rounded down: what vLLM's memory profile starts
// from. A device not listed needs device.memory_gib.
var knownDevices = map[string]float64{
	"A10G":      22.0,
	"L4":        22.0,
	"A100-40GB": 39.4,
	"L40S":      44.4,
	"A100-80GB": 79.1,
	"H100-80GB": 79.1,
	"H100":      79.1,
	"H100-94GB": 93.1,
	"H200":      139,
	"B200":      178,
}

// deviceMemory looks a device name up, ignoring case.
func deviceMemory(name string) (float64, bool) {
	for n, gib := range knownDevices {
		if strings.EqualFold(n, name) {
			return gib, true
		}
	}
	return 0, false
}

// deviceNames lists the known devices, sorted.
func deviceNames() []string {
	out := make([]string, 0, len(knownDevices))
	for n := range knownDevices {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
