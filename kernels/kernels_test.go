package kernels

import (
	"os"
	"regexp"
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

// Every decode row is covered exactly by the grid, and the grid stays
// near one wave.
func TestSSUGridCoversRows(t *testing.T) {
	for _, c := range []struct{ rows, bx, sms int }{{1, 128, 132}, {64, 128, 132}, {256, 128, 132}, {1024, 256, 132},
		{1000, 1, 1}, {7, 1000, 2}, {3, 2, 132}} {
		gy, rpb := SSUGrid(c.rows, c.bx, c.sms)
		if rpb < 1 || gy*rpb < c.rows || (gy-1)*rpb >= c.rows {
			t.Errorf("SSUGrid(%d, %d, %d) = %d rows of blocks × %d rows: does not cover the rows exactly", c.rows, c.bx, c.sms, gy, rpb)
		}
		if waves := float64(gy*c.bx) / float64(c.sms*SSUBlocksPerSM); gy > 1 && waves > 1.5 {
			t.Errorf("SSUGrid(%d, %d, %d): %d blocks, %.1f waves", c.rows, c.bx, c.sms, gy*c.bx, waves)
		}
	}
	if gy, _ := SSUGrid(0, 128, 132); gy != 0 {
		t.Errorf("no rows: grid.y %d", gy)
	}
}
