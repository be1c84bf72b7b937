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

// Every decode row is covered exactly by the grid, rows per block stay
// within [1, SSUMaxRows], and the grid is about SSUWaves waves.
func TestSSUGridCoversRows(t *testing.T) {
	for _, c := range []struct{ rows, bx, per, sms int }{{1, 128, 8, 132}, {64, 32, 4, 132}, {256, 32, 4, 132},
		{1024, 64, 4, 132}, {1000, 1, 1, 1}, {7, 1000, 8, 2}, {3, 2, 8, 132}} {
		gy, rpb := SSUGrid(c.rows, c.bx, c.per, c.sms)
		if rpb < 1 || rpb > SSUMaxRows || gy*rpb < c.rows || (gy-1)*rpb >= c.rows {
			t.Errorf("SSUGrid%v = (%d, %d): does not cover the rows exactly within the row cap", c, gy, rpb)
		}
		// rpb is the fewest rows per block that keep the grid within
		// SSUWaves waves, unless capped.
		slots := c.sms * c.per * SSUWaves
		if rpb < SSUMaxRows && c.rows*c.bx > slots*rpb {
			t.Errorf("SSUGrid%v = (%d, %d): more than %d waves of blocks", c, gy, rpb, SSUWaves)
		}
		if rpb > 1 && c.rows*c.bx <= slots*(rpb-1) {
			t.Errorf("SSUGrid%v = (%d, %d): %d rows per block would do", c, gy, rpb, rpb-1)
		}
	}
	if gy, _ := SSUGrid(0, 128, 4, 132); gy != 0 {
		t.Errorf("no rows: grid.y %d", gy)
	}
}

// The d_state 16 decode: _b16 from SSUBulkMinChannelRows channel-rows (or
// when forced), _n16 below; every row and channel covered within the caps.
func TestSSU16Launch(t *testing.T) {
	for _, c := range []struct {
		rows, di int
		v        SSU16Variant
		want     string
	}{{256, 4096, SSU16Auto, "selective_state_update_n16"}, {64, 8192, SSU16Auto, "selective_state_update_n16"},
		{256, 8192, SSU16Auto, "selective_state_update_b16"}, {1024, 4096, SSU16Auto, "selective_state_update_b16"},
		{1024, 8192, SSU16Auto, "selective_state_update_b16"}, {3, 64, SSU16Bulk, "selective_state_update_b16"},
		{5000, 8192, SSU16Slab, "selective_state_update_n16"}, {7, 100, SSU16Bulk, "selective_state_update_b16"}} {
		name, gx, gy, blk, rpb := SSU16Launch(c.rows, c.di, 132, c.v)
		if name != c.want {
			t.Errorf("SSU16Launch(%d, %d, %d) = %s, want %s", c.rows, c.di, c.v, name, c.want)
		}
		maxRows := SSUMaxRows
		if name == "selective_state_update_b16" {
			maxRows = SSUBulkMaxRows
		}
		if gx*blk < c.di || (gx-1)*blk >= c.di || rpb < 1 || rpb > maxRows || gy*rpb < c.rows || (gy-1)*rpb >= c.rows {
			t.Errorf("SSU16Launch(%d, %d, %d) = (%s, %d, %d, %d, %d): does not cover rows and channels exactly within the caps",
				c.rows, c.di, c.v, name, gx, gy, blk, rpb)
		}
	}
	// The sweep's settings at batch 256 × d_inner 8192: 128 channel blocks, 4 rows per block.
	if _, gx, gy, blk, rpb := SSU16Launch(256, 8192, 132, SSU16Auto); gx != 128 || gy != 64 || blk != 64 || rpb != 4 {
		t.Errorf("SSU16Launch(256, 8192) = (%d, %d, %d, %d), want (128, 64, 64, 4)", gx, gy, blk, rpb)
	}
}

// The recurrent state kernels are built for StateRecThreads threads a
// block (__launch_bounds__ in state.cu, .maxntid in the PTX): the cuda
// backend launches that many, so the constant and the committed PTX move
// together.
func TestStateRecThreadsMatchPTX(t *testing.T) {
	for _, m := range Modules() {
		if m.Name != "state" {
			continue
		}
		for _, k := range []string{"gdn_recurrent_decode", "mamba2_state_update"} {
			re := regexp.MustCompile(`(?s)\.entry ` + k + `\(.*?\.maxntid (\d+), 1, 1`)
			got := re.FindStringSubmatch(m.PTX)
			if got == nil || got[1] != strconv.Itoa(StateRecThreads) {
				t.Errorf("%s: PTX block size %v, StateRecThreads %d", k, got, StateRecThreads)
			}
		}
		return
	}
	t.Fatal("no state module")
}

// The cuda backend's grid divides dv by StateRecRows; state.cu's default
// REC_WARPS × REC_ROWS is what each block covers.
func TestStateRecRowsMatchSource(t *testing.T) {
	src, err := os.ReadFile("state.cu")
	if err != nil {
		t.Fatal(err)
	}
	def := func(name string) int {
		m := regexp.MustCompile(`(?m)^#define ` + name + ` (\d+)`).FindSubmatch(src)
		if m == nil {
			t.Fatalf("state.cu: no default for %s", name)
		}
		n, _ := strconv.Atoi(string(m[1]))
		return n
	}
	if w, r := def("REC_WARPS"), def("REC_ROWS"); w*r != StateRecRows || 32*w != StateRecThreads {
		t.Errorf("state.cu: %d warps × %d rows; kernels: StateRecThreads %d, StateRecRows %d", w, r, StateRecThreads, StateRecRows)
	}
}
