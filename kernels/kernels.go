package kernels

import _ "embed"

//go:embed mamba.ptx
var mambaPTX string

//go:embed layers.ptx
var layersPTX string

//go:embed state.ptx
var statePTX string

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
		"selective_state_update_b16", "selective_state_update_n16", "selective_state_update_v4", "selective_state_update_v1",
	}}
	Layers = Module{Name: "layers", PTX: layersPTX, Kernels: []string{
		"embed_tokens", "rms_norm", "matmul_nt", "add_inplace",
		"reshape_and_cache", "paged_attention", "log_softmax",
	}}
	// State is the recurrence of the kinds beyond Mamba1: GDN's (and
	// KDA's) recurrent decode and chunked prefill, Mamba2's (and linear
	// attention's) state update and SSD scan.
	State = Module{Name: "state", PTX: statePTX, Kernels: []string{
		"gdn_recurrent_decode", "mamba2_state_update", "gdn_chunk_prefill", "mamba2_ssd_scan",
	}}
)

// Launch geometry of the state kernels (kernels/state.cu): the recurrent
// kernels run StateRecThreads threads a block, StateRecRows value rows a
// block; the chunked ones StateChunkThreads threads, one value row each,
// with StateChunkShared floats of shared memory for a chunk of l tokens.
const (
	StateRecThreads   = 128
	StateRecRows      = 32 // REC_WARPS × REC_ROWS
	StateChunkThreads = 128
	StateMaxDK        = 128
	StateMaxChunk     = 64
)

// StateChunkShared is the chunked kernels' dynamic shared memory in bytes
// for chunks of l tokens and dk key channels.
func StateChunkShared(l, dk int) int { return 4 * (5*l*dk + 2*l*l + l) }

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
// rows_per_block argument, at most SSUMaxRows.
func SSUGrid(nrows, blocksX, blocksPerSM, sms int) (gridY, rowsPerBlock int) {
	return ssuGrid(nrows, blocksX, blocksPerSM, sms, SSUMaxRows)
}

func ssuGrid(nrows, blocksX, blocksPerSM, sms, maxRows int) (gridY, rowsPerBlock int) {
	if nrows <= 0 {
		return 0, 1
	}
	slots := max(1, sms*blocksPerSM*SSUWaves)
	rowsPerBlock = min(maxRows, max(1, (nrows*max(blocksX, 1)+slots-1)/slots))
	return (nrows + rowsPerBlock - 1) / rowsPerBlock, rowsPerBlock
}

// The d_state 16 decode kernels: _n16 (128 channels per block, cp.async
// slabs) and _b16 (the same math, bitwise equal, each row's slab moved by one
// bulk copy in and one out). On an H200 (docs/kernel-bench.md) _b16 with
// SSUBulkChannels channels per block, SSUBulkBlocksPerSM resident blocks and
// at most SSUBulkMaxRows rows per block ran 2–3% faster than _n16 at batch
// 256 × d_inner 8192 and at batch 1024 (d_inner 4096 and 8192), and level at
// batch 256 × d_inner 4096; smaller decodes were not swept. So _b16 runs from
// SSUBulkMinChannelRows decode rows × d_inner, _n16 below.
const (
	SSU16Channels         = 128
	SSUBulkChannels       = 64
	SSUBulkBlocksPerSM    = 8
	SSUBulkMaxRows        = 4
	SSUBulkMinChannelRows = 1 << 21 // batch 256 × d_inner 8192
)

// SSU16Variant names which d_state 16 decode kernel to launch.
type SSU16Variant int

const (
	SSU16Auto SSU16Variant = iota // by size, as SSU16Launch chooses
	SSU16Slab                     // selective_state_update_n16
	SSU16Bulk                     // selective_state_update_b16
)

// SSU16Launch is the launch of the d_state 16 decode state update for nrows
// rows of d_inner di on sms multiprocessors: the kernel, grid (x, y), block
// size and rows_per_block. v forces a kernel; SSU16Auto chooses by size.
func SSU16Launch(nrows, di, sms int, v SSU16Variant) (name string, gridX, gridY, block, rowsPerBlock int) {
	if v == SSU16Auto {
		v = SSU16Slab
		if int64(nrows)*int64(di) >= SSUBulkMinChannelRows {
			v = SSU16Bulk
		}
	}
	if v == SSU16Bulk {
		gridX = (di + SSUBulkChannels - 1) / SSUBulkChannels
		gridY, rowsPerBlock = ssuGrid(nrows, gridX, SSUBulkBlocksPerSM, sms, SSUBulkMaxRows)
		return "selective_state_update_b16", gridX, gridY, SSUBulkChannels, rowsPerBlock
	}
	gridX = (di + SSU16Channels - 1) / SSU16Channels
	gridY, rowsPerBlock = SSUGrid(nrows, gridX, SSU16BlocksPerSM, sms)
	return "selective_state_update_n16", gridX, gridY, SSU16Channels, rowsPerBlock
}

// Modules are every module the backend loads.
func Modules() []Module { return []Module{Mamba, Layers, State} }
