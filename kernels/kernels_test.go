package kernels

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// entries are the kernels a PTX module declares.
func entries(ptx string) map[string]bool {
	out := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\.visible \.entry (\w+)\(`).FindAllStringSubmatch(ptx, -1) {
		out[m[1]] = true
	}
	return out
}

// The committed PTX must declare every kernel the cuda backend loads, for
// sm_90, or the backend fails at start-up on the GPU machine.
func TestPTXDeclaresEveryKernel(t *testing.T) {
	for _, m := range Modules() {
		if !regexp.MustCompile(`(?m)^\.target sm_90\b`).MatchString(m.PTX) {
			t.Errorf("%s.ptx: no `.target sm_90` line (regenerate with make ptx)", m.Name)
		}
		have := entries(m.PTX)
		for _, k := range m.Kernels {
			if !have[k] {
				t.Errorf("%s.ptx does not declare `.visible .entry %s` (regenerate with make ptx)", m.Name, k)
			}
		}
	}
}

// Every listed kernel is named in its source, and every entry in the PTX is
// listed, so the list, the sources and the PTX cannot drift apart silently.
func TestKernelListMatchesSources(t *testing.T) {
	for _, m := range Modules() {
		src, err := os.ReadFile(m.Name + ".cu")
		if err != nil {
			t.Fatal(err)
		}
		listed := map[string]bool{}
		for _, k := range m.Kernels {
			listed[k] = true
			if !strings.Contains(string(src), k) {
				t.Errorf("%s.cu never names kernel %s", m.Name, k)
			}
		}
		for k := range entries(m.PTX) {
			if !listed[k] {
				t.Errorf("%s.ptx declares %s, which the module list omits", m.Name, k)
			}
		}
	}
}

func TestEntriesParser(t *testing.T) {
	got := entries(".visible .entry a(\n.entry b(\n.visible .entry c_d(\n")
	if !got["a"] || got["b"] || !got["c_d"] || len(got) != 2 {
		t.Errorf("entries = %v", got)
	}
}

// The launch geometry the backend derives from SSURows must match the
// kernel's own constant.
func TestSSURowsMatchesSource(t *testing.T) {
	src, err := os.ReadFile("mamba.cu")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^#define SSU_ROWS (\d+)`).FindSubmatch(src)
	if m == nil || string(m[1]) != strconv.Itoa(SSURows) {
		t.Errorf("mamba.cu defines SSU_ROWS %q, kernels.SSURows is %d", m, SSURows)
	}
}
