package kernels

import _ "embed"

//go:embed mamba.ptx
var mambaPTX string

//go:embed layers.ptx
var layersPTX string

// Module is one PTX module and the kernels the backend takes from it.
type Module struct {
	Name    string // the .cu source's base name
	PTX     string
	Kernels []string
}

// Mamba and Layers are the two modules; Modules lists both.
var (
	Mamba = Module{Name: "mamba", PTX: mambaPTX, Kernels: []string{
		"causal_conv1d_fwd", "causal_conv1d_update",
		"selective_scan_fwd_u32", "selective_scan_fwd_u64",
		"selective_state_update_n16", "selective_state_update_v4", "selective_state_update_v1",
	}}
	Layers = Module{Name: "layers", PTX: layersPTX, Kernels: []string{
		"embed_tokens", "rms_norm", "matmul_nt", "add_inplace",
		"reshape_and_cache", "paged_attention", "log_softmax",
	}}
)

// Launch geometry of the selective_state_update kernels: about
// SSUWaves waves of blocks, each walking at most SSUMaxRows decode rows,
// with the resident blocks per multiprocessor their registers and shared
// memory allow (SSU16BlocksPerSM for _n16, SSUBlocksPerSM for _v4/_v1).
// Measured on an H200 (docs/kernel-bench.md): fewer rows per block leave
// the copy pipeline empty, more leave a trailing partial wave.
const (
	SSUWaves         = 4
	SSUMaxRows       = 8
	SSU16BlocksPerSM = 4
	SSUBlocksPerSM   = 8
)

// SSUGrid sizes the grid for nrows decode rows and blocksX channel blocks
// on sms multiprocessors holding blocksPerSM blocks each: grid.y and the
// rows_per_block argument.
func SSUGrid(nrows, blocksX, blocksPerSM, sms int) (gridY, rowsPerBlock int) {
	if nrows <= 0 {
		return 0, 1
	}
	slots := max(1, sms*blocksPerSM*SSUWaves)
	rowsPerBlock = min(SSUMaxRows, max(1, (nrows*max(blocksX, 1)+slots-1)/slots))
	return (nrows + rowsPerBlock - 1) / rowsPerBlock, rowsPerBlock
}

// Modules are every module the backend loads.
func Modules() []Module { return []Module{Mamba, Layers} }
