package setup_test

import (
	"strings"
	"testing"

	"statesim/setup"
	"statesim/statecache"
)

func load(t *testing.T, name string, sets ...string) *setup.Setup {
	t.Helper()
	st, err := setup.Load(name, sets)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// The memory estimate refuses a pool the machine cannot hold, before
// anything is allocated; vLLM's max_model_len check refuses a cache that
// cannot hold one request at max_model_len.
func TestCheckPool(t *testing.T) {
	st := load(t, "imposter-mock", "engine.num_gpu_blocks_override=10000000")
	err := st.CheckPool()
	if err == nil || !strings.Contains(err.Error(), "field checks.max_memory_gib: the run needs about") || !strings.Contains(err.Error(), "mock backend's cache tensors") {
		t.Errorf("10M-block mock: %v", err)
	}
	if err := load(t, "imposter-mock", "engine.num_gpu_blocks_override=10000000", "checks.max_memory_gib=1000").CheckPool(); err != nil {
		t.Errorf("raised limit: %v", err)
	}
	if err := load(t, "imposter-mock").CheckPool(); err != nil {
		t.Errorf("imposter-mock as built: %v", err)
	}

	st = load(t, "azure-conv", "engine.max_model_len=10000000")
	st.Pool = setup.Pool{NumBlocks: 1000}
	err = st.CheckPool()
	if err == nil || !strings.Contains(err.Error(), "field engine.max_model_len: to serve at least one request with max_model_len 10000000") ||
		!strings.Contains(err.Error(), "the estimated maximum model length is") {
		t.Errorf("max_model_len over the cache: %v", err)
	}
	// Exactly at the limit fits; one block short does not.
	l := st.Layout
	blocks := 1 + l.NumMambaGroups() + l.NumAttnGroups()*4
	st.Scenario.Engine.MaxModelLen = 4 * l.BlockSize
	st.Pool = setup.Pool{NumBlocks: blocks}
	if err := st.CheckPool(); err != nil {
		t.Errorf("a request that just fits: %v", err)
	}
	st.Pool = setup.Pool{NumBlocks: blocks - 1}
	if err := st.CheckPool(); err == nil {
		t.Error("a request one block short of fitting was accepted")
	}
	// With num_gpu_blocks_override vLLM checks profiled memory, not the
	// override: the liveness check reports a pool too small instead.
	st = load(t, "imposter-mock", "engine.max_model_len=100000")
	st.Pool.NumBlocks = 60
	if err := st.CheckPool(); err != nil {
		t.Errorf("override: %v", err)
	}
	// A pool the memory model cannot size is bad input too.
	st.Pool = setup.Pool{Err: errTest}
	if err := st.CheckPool(); err == nil || !strings.Contains(err.Error(), "imposter-mock") {
		t.Errorf("unsized pool: %v", err)
	}
}

var errTest = testErr("the weights exceed the device")

type testErr string

func (e testErr) Error() string { return string(e) }

// checks.max_memory_gib counts the prefix cache's records and table: the
// largest pool within the limit passes, one block more is refused naming
// the prefix cache's share.
func TestPoolBoundCountsPrefixCache(t *testing.T) {
	doc := "name: p\nmodel: {preset: tiny-hybrid}\nengine: {num_gpu_blocks_override: 1000000, enable_prefix_caching: true, mamba_cache_mode: align}\nworkload: {kind: poisson, rate: 1, count: 1}\n"
	st, err := setup.Parse([]byte(doc), "p.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	const blocks = 1000000
	fp := statecache.EstimateFootprint(blocks, st.Layout.BlockBytes(), false).WithPrefixCaching(blocks)
	if fp.Prefix <= fp.Pool {
		t.Fatalf("prefix cache %d bytes, pool %d: the estimate leaves the prefix cache out", fp.Prefix, fp.Pool)
	}
	st.Scenario.Checks.MaxMemoryGiB = statecache.GiB(fp.Total())
	st.Pool = setup.Pool{NumBlocks: blocks, FromOverride: true}
	if err := st.CheckPool(); err != nil {
		t.Fatalf("at the bound: %v", err)
	}
	st.Pool.NumBlocks = blocks + 1
	if err := st.CheckPool(); err == nil || !strings.Contains(err.Error(), "prefix cache") {
		t.Fatalf("past the bound: %v", err)
	}
}

// acceptance_rate without a speculative method cannot apply: refused at
// its line, naming the field.
func TestAcceptanceRateNeedsAMethod(t *testing.T) {
	doc := "name: s\nmodel: {preset: tiny-hybrid}\nengine:\n  num_gpu_blocks_override: 256\n  speculative: {acceptance_rate: 0.5}\nworkload: {kind: poisson, rate: 1, count: 1}\n"
	_, err := setup.Parse([]byte(doc), "s.yaml", nil)
	if err == nil || !strings.Contains(err.Error(), "field engine.speculative.acceptance_rate: applies only with a speculative method") {
		t.Errorf("acceptance_rate without a method: %v", err)
	}
}
