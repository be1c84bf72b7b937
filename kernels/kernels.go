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
		"selective_state_update_v4", "selective_state_update_v1",
	}}
	Layers = Module{Name: "layers", PTX: layersPTX, Kernels: []string{
		"embed_tokens", "rms_norm", "matmul_nt", "add_inplace",
		"reshape_and_cache", "paged_attention", "log_softmax",
	}}
)

// SSUBlocksPerSM is how many 128-thread blocks of the
// selective_state_update kernels the grid plans per multiprocessor (their
// registers allow about 10 resident).
const SSUBlocksPerSM = 8

// SSUGrid sizes the selective_state_update grid for nrows decode rows and
// blocksX channel blocks on sms multiprocessors: about one wave of blocks,
// each walking rowsPerBlock rows, so the asynchronous-copy pipeline fills
// once per block and no second, partial wave trails.
func SSUGrid(nrows, blocksX, sms int) (gridY, rowsPerBlock int) {
	if nrows <= 0 {
		return 0, 1
	}
	wave := max(1, sms*SSUBlocksPerSM/max(blocksX, 1))
	rowsPerBlock = (nrows + wave - 1) / wave
	return (nrows + rowsPerBlock - 1) / rowsPerBlock, rowsPerBlock
}

// Modules are every module the backend loads.
func Modules() []Module { return []Module{Mamba, Layers} }
