package setup

import (
	"statesim/model"
	"statesim/scenarios"
	"statesim/sched"
	"statesim/statecache"
)

// Setup is a scenario settled: what every part of a run reads.
type Setup struct {
	// Scenario is where it came from; its name, seed, workload, timing,
	// checks and device are read as given.
	Scenario *scenarios.Scenario
	// Version is vllm_version with engine.patches applied. V1 is false
	// for the v0 control; Release is the release the V1 rules read (the
	// newest for the fixed alias).
	Version sched.Version
	Release statecache.Release
	V1      bool
	// Runner is engine.model_runner, or the release's default.
	Runner sched.Runner
	// GuardIgnored: engine.patches add #53059 under Model Runner V2,
	// where the PR's edit (GPUModelRunner._is_uniform_decode) is not on
	// the dispatch path, so it changes nothing.
	GuardIgnored bool
	CUDAGraphs   sched.CUDAGraphMode
	// Spec is speculative_config (off: K 0); its Rand is left for the
	// engine to seed.
	Spec sched.Spec
	// Connector is engine.kv_transfer_config's KV connector (none: off).
	Connector sched.Connector
	// Mamba is prefix caching as vLLM settles it for the model and
	// release, with the Mamba cache mode (none for a model without Mamba
	// layers).
	Mamba statecache.ResolvedMambaMode
	// Shape is the model; Layout its KV cache layout as run (the
	// drafter's attention layers included; in mamba_cache_mode all, the
	// block rounded to the Mamba kernel's chunk).
	Shape  model.Shape
	Layout model.Layout
	// Groups are Layout's KV cache groups with each spec's block size.
	// MambaBlockSize is cache_config.mamba_block_size (0 without Mamba
	// layers); CacheBlockSize is cache_config.block_size as the engine
	// core leaves it after the workers size their caches, the smallest
	// group block size (model.CacheBlockSize): the divisor of align
	// mode's chunking. WorkerBlockSize is cache_config.block_size as the
	// worker reads it, the divisor of V2's add_request seed (groups.go
	// says when the two differ).
	Groups          []model.GroupSpec
	MambaBlockSize  int
	CacheBlockSize  int
	WorkerBlockSize int
	// SeedBlockSize is what Model Runner V2's add_request divides a
	// resumed position by: WorkerBlockSize, or the Mamba block with
	// #53798 (V1 divides by the Mamba spec's block whatever it is).
	SeedBlockSize int
	// SchedulerBlockSize and HashBlockSize are scheduler_block_size (the
	// lcm of the group blocks) and hash_block_size (with prefix caching in
	// align mode, engine.prefix_match_unit if set, else their gcd;
	// model.HashBlockSizeWith): the layout's block while every group has
	// it and prefix_match_unit is unset.
	SchedulerBlockSize int
	HashBlockSize      int
	// FineGrainedHits is the hybrid coordinator's enable_partial_hash_hits
	// (#46384): prefix-cache hits at the hash block, inside a Mamba align
	// block (groups.go).
	FineGrainedHits bool
	// Draft is the DFlash drafter's sliding-window layers (method dflash;
	// zero otherwise).
	Draft model.DraftWindow
	// IndexBits is the width the prefill kernel forms slot × stride in:
	// state_index_bits where that kind's kernel used 32 bits, else 64
	// (model.Shape.IndexBits): the width in effect, not the one asked.
	IndexBits uint
	Pool      Pool
	Sched     Sched
	Cache     statecache.ManagerOptions
	Backend   Backend
	// AsyncOff is the warning vLLM logs when it turns asked-for async
	// scheduling off for Mamba prefix caching; empty when it runs as asked.
	AsyncOff string
	// Warnings are every start-up warning of the settled scenario, AsyncOff
	// first: what a run's report lists.
	Warnings []string
}

// Pool is the block pool's size: num_gpu_blocks_override, or what the
// memory model leaves for the layout's blocks.
type Pool struct {
	NumBlocks    int
	FromOverride bool
	// Err is why the memory model could not size it (the model command
	// reports it; a run refuses it).
	Err error
}

// Sched is the scheduler's settings beyond sched.Config.
type Sched struct {
	Config       sched.Config
	ForcePrefill bool
	// GraphMaxBS is decode_cudagraph_max_bs: max_num_seqs, with capture
	// sizes up to 512.
	GraphMaxBS int
}

// Backend is what a backend takes from the run besides the shape, the
// layout and the pool.
type Backend struct {
	Kind string
	// WeightSeed seeds the numeric model's weights: backend.weight_seed,
	// or the scenario seed when that is 0.
	WeightSeed          uint64
	Temperature         float64
	DivergenceThreshold float64
	// Shadow (cuda) also runs the mock engine on every batch.
	Shadow bool
	// IndexBits is Setup.IndexBits.
	IndexBits uint
}

// Load reads a scenario by built-in name or path (scenarios.Load) and
// settles it; a rule across fields names the line of the field it
// refuses.
func Load(arg string, sets []string) (*Setup, error) {
	sc, src, err := scenarios.Read(arg, sets)
	if err != nil {
		return nil, err
	}
	return resolve(sc, src)
}

// Parse is Load for a scenario's bytes (scenarios.Parse).
func Parse(data []byte, name string, sets []string) (*Setup, error) {
	sc, src, err := scenarios.Decode(data, name, sets)
	if err != nil {
		return nil, err
	}
	return resolve(sc, src)
}

// Resolve settles a scenario built or edited in code (its fields already
// checked: scenarios.Scenario.Validate); errors name the file and field,
// without a line.
func Resolve(sc *scenarios.Scenario) (*Setup, error) { return resolve(sc, nil) }
