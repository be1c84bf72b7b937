package engine

import (
	"bytes"
	"crypto/sha256"
	"runtime"
	"strconv"
	"testing"

	"statesim/internal/testtier"
	"statesim/report"
	"statesim/scenarios"
)

// The check shortcuts (verified KV prefixes, leased records; see
// statecache.Provenances) must not change a single byte of a run: every
// violation, imposter and trace line is the same with them off.
func TestShortcutsChangeNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("replays several scenarios twice")
	}
	for _, c := range []struct {
		name string
		sets []string
	}{
		{"imposter", nil},
		// Bug B clobbering KV blocks and state slots, step after step
		// (wrap32Small).
		{"wrap32", wrap32Small()},
		// Production arrivals under pressure: preemptions, chunked
		// prefills, bug A and a wrapping index on a small pool. (1,000
		// requests in the suite: 13 preemptions in the first, 5,000
		// violations in the second.)
		{"azure-conv", []string{sizedSet("workload.limit", 1000, 3000), "workload.rate_scale=6", "engine.num_gpu_blocks_override=700"}},
		{"azure-conv", []string{sizedSet("workload.limit", 1000, 3000), "workload.rate_scale=6", "engine.num_gpu_blocks_override=900",
			"engine.state_index_bits=24", "engine.vllm_version=v0.14", "engine.scheduling_policy=priority"}},
		// Today's cache, align mode, on the same pressure with a wrapping
		// index: boundary copies from clobbered, stale and clean sources,
		// some groups tainted and some not (the backend's copied-state
		// lease, leaseCopied).
		{"azure-conv", []string{sizedSet("workload.limit", 1000, 3000), "workload.rate_scale=6", "engine.num_gpu_blocks_override=900",
			"engine.state_index_bits=24", "engine.vllm_version=v0.31", "engine.enable_prefix_caching=true"}},
	} {
		j1, t1 := sharedRunBytes(t, c.name, c.sets...) // maybe TestSameSeedSameBytes'
		j2, t2 := runTraced(t, c.name, true, c.sets...)
		if !bytes.Equal(j1, j2) {
			t.Errorf("%s %v: --json differs with the shortcuts off:\n%s\nvs\n%s", c.name, c.sets, j1, j2)
		}
		if !bytes.Equal(t1, t2) {
			t.Errorf("%s %v: --trace differs with the shortcuts off", c.name, c.sets)
		}
		// Every block's record at the end too: a taint the report and
		// the trace do not show yet still differs there.
		if d1, d2 := runDigest(t, c.name, false, c.sets), runDigest(t, c.name, true, c.sets); !bytes.Equal(d1, d2) {
			t.Errorf("%s %v: the blocks' records differ with the shortcuts off", c.name, c.sets)
		}
	}
}

// runDigest is the digest (withDigest) of a run with the check shortcuts
// on or off (plain).
func runDigest(t *testing.T, name string, plain bool, sets []string) []byte {
	t.Helper()
	sc, err := scenarios.Load(name, sets)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	if _, err := Run(sc, withDigest(Options{plainChecks: plain}, h)); err != nil {
		t.Fatal(err)
	}
	return h.Sum(nil)
}

// A trace is streamed: requests are read as the clock reaches them and
// their objects recycled, so a run holds as many requests as are in
// flight, however long the trace.
func TestMemoryBoundedByInFlight(t *testing.T) {
	// 5,000 requests in the suite: at most 2*240+256 objects may be live,
	// so a run that kept every request fails by a factor of seven.
	count := testtier.Sized(5000, 30000)
	sc, err := scenarios.Load("synthetic-1m", []string{"workload.count=" + strconv.Itoa(count)})
	if err != nil {
		t.Fatal(err)
	}
	objects := 0
	rep, err := Run(sc, Options{newRequests: &objects})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Finished != int64(count) {
		t.Fatalf("%d of %d requests finished", rep.Finished, count)
	}
	// In flight: at most max_batch_rows running plus a short queue.
	if n := objects; n > 2*rep.MaxBatchRows+256 {
		t.Errorf("%d request objects for %d requests with at most %d running: memory grows with the trace", n, count, rep.MaxBatchRows)
	}
}

// No allocation per step or per request: tripling the Azure replay (about
// 210k to 610k steps) must not add allocations beyond noise.
func TestNoAllocationPerStep(t *testing.T) {
	mallocs := func(limit string) (uint64, int64) {
		sc, err := scenarios.Load("azure-conv", []string{"workload.limit=" + limit})
		if err != nil {
			t.Fatal(err)
		}
		var a, b runtime.MemStats
		runtime.ReadMemStats(&a)
		rep, err := Run(sc, Options{})
		if err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&b)
		return b.Mallocs - a.Mallocs, rep.Steps
	}
	short, s1 := mallocs("2000")
	long, s2 := mallocs("6000")
	if long > short+100 {
		t.Errorf("%d allocations for %d steps, %d for %d: something allocates per step or request", short, s1, long, s2)
	}
}

// With prefix caching, what a run holds is bounded by the pool and the
// requests in flight, not by the trace: the cached-block table and the
// blocks' records are arrays over the pool, and a request's block hashes
// live in its recycled object. Four times the rollouts (the same prompts
// every training step, new completions) must reuse the same request
// objects and allocate almost nothing more.
func TestPrefixCachingMemoryFlat(t *testing.T) {
	run := func(steps string) (objects int, mallocs uint64, rep *report.Report) {
		sc, err := scenarios.Load("rollouts-shared-prefix", []string{"workload.prompts=2", "workload.rollouts_per_prompt=8",
			"engine.num_gpu_blocks_override=2000", "workload.steps=" + steps}) // a pool the trace wraps many times
		if err != nil {
			t.Fatal(err)
		}
		var a, b runtime.MemStats
		runtime.ReadMemStats(&a)
		rep, err = Run(sc, Options{newRequests: &objects})
		if err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&b)
		return objects, b.Mallocs - a.Mallocs, rep
	}
	o1, m1, r1 := run("3")
	o4, m4, r4 := run("12")
	if r4.Finished != 4*r1.Finished || r4.PrefixCache.HitTokens <= 3*r1.PrefixCache.HitTokens || r4.PrefixCache.EvictedBlocks < 2*2000 {
		t.Fatalf("the long run should finish 4x the requests and keep hitting and evicting: %d and %d finished, hits %d and %d, evictions %d",
			r1.Finished, r4.Finished, r1.PrefixCache.HitTokens, r4.PrefixCache.HitTokens, r4.PrefixCache.EvictedBlocks)
	}
	if o4 > o1 || o4 > 16 {
		t.Errorf("%d request objects for %d requests, %d for %d (16 in flight): memory grows with the trace", o1, r1.Requests, o4, r4.Requests)
	}
	if m4 > m1+100 {
		t.Errorf("%d allocations for %d requests, %d for %d: something allocates per request", m1, r1.Requests, m4, r4.Requests)
	}
	t.Logf("%d and %d requests: %d and %d request objects, %d and %d allocations, %d blocks evicted", r1.Requests, r4.Requests, o1, o4, m1, m4, r4.PrefixCache.EvictedBlocks)
}
