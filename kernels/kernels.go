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

// SSURows is SSU_ROWS in mamba.cu: the decode rows one block of the
// selective_state_update kernels walks (grid.y = ceil(rows / SSURows)).
const SSURows = 16

// Modules are every module the backend loads.
func Modules() []Module { return []Module{Mamba, Layers} }
