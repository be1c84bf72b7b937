package prop_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"statesim/backend"
	"statesim/engine"
	"statesim/internal/testtier"
	"statesim/invariant"
	"statesim/report"
	"statesim/scenarios"
	"statesim/setup"
	"statesim/sim"
	"statesim/step"
	"statesim/workload"
)

// TestRegressionsOnTheMock replays every kept counterexample (and fixed
// twin) in scenarios/regressions on the mock backend, whatever its state
// kind (GDN, KDA and Mamba2 models run as their tiny stand-ins), and
// holds the numbers to the cache check: every request the symbolic
// backend names as reading another request's bytes or a column its own
// state is not in diverges from the reference, and nothing else does; a
// run with no stale read equals the reference exactly (max |Δ| = 0).
// Stale reads of never-written bytes (zeros, what a fresh state starts
// from) may go either way. Prefix caching runs as the file's release
// resolves it (align and all mode's state copies on the numbers; the EAGLE
// drop's fresh KV blocks), async scheduling as the file asks.
// Replays too long for the suite tier (slowOnTheMock) run in the long
// tier; the suite checks only that the mock takes them at start-up.
func TestRegressionsOnTheMock(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(regressionsDir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios in %s: %v", regressionsDir, err)
	}
	ran := 0
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		// The mock runs what the symbolic backend runs: prefix caching as
		// the file's release resolves it (the numeric backends' default
		// is off), so align and all mode's copies run on the numbers.
		sym, err := setup.Load(f, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		pc := fmt.Sprintf("engine.enable_prefix_caching=%t", sym.Mamba.PrefixCaching)
		st, err := setup.Load(f, []string{"backend.kind=mock", "checks.keep=1000", pc})
		if err != nil {
			var ie *scenarios.InputError
			if errors.As(err, &ie) && ie.Path == "engine.enable_prefix_caching" {
				t.Logf("%s: not replayed on the mock: %v", name, err)
				continue
			}
			t.Fatalf("%s: %v", name, err)
		}
		if why, slow := slowOnTheMock[name]; slow && !testtier.Long() {
			// The start-up check the run would make: the mock's caches
			// (its bound, every chunk written) within checks.max_memory_gib.
			caches, err := backend.CacheBytes("mock", &backend.Env{Setup: st, Shape: &st.Shape, Layout: st.Layout, NumBlocks: st.Pool.NumBlocks})
			if err == nil {
				err = st.CheckPoolWith(caches)
			}
			if err != nil {
				t.Errorf("%s: the mock refuses it at start-up: %v", name, err)
			}
			t.Logf("%s: replayed in the long tier only ($STATESIM_LONG): %s", name, why)
			continue
		}
		ran++
		t.Run(name, func(t *testing.T) {
			if _, slow := slowOnTheMock[name]; slow {
				t.Parallel() // the long replays side by side, after the rest
			}
			ends, err := requestEnds(st)
			if err != nil {
				t.Fatal(err)
			}
			// Rows whose step samples only positions past the request's
			// last token: the engine keeps none of their tokens (under
			// async scheduling a step may be scheduled while the one in
			// flight brings the last token), so a stale read there shows
			// in no log-prob.
			unseen := map[[2]int64]bool{}
			observe := func(rec *step.Record) {
				for _, x := range rec.Rows {
					if e, ok := ends[x.RequestID]; ok && x.NumComputed+x.NumScheduled-x.NumDrafts >= e {
						unseen[[2]int64{rec.Step, x.RequestID}] = true
					}
				}
			}
			rep, err := engine.RunSetup(st, engine.Options{Observe: observe})
			if err != nil {
				t.Fatal(err)
			}
			holdsToSymbolic(t, rep, f+" --set "+pc, unseen)
			if _, slow := slowOnTheMock[name]; slow {
				t.Logf("the mock's cache tensors held %d bytes (%.1f MiB)", rep.Divergence.CacheBytes, float64(rep.Divergence.CacheBytes)/(1<<20))
			}
		})
	}
	if ran < len(files)/2 {
		t.Errorf("only %d of %d regressions replayed on the mock", ran, len(files))
	}
}

// slowOnTheMock are the regressions whose mock replay takes minutes: the
// mock recomputes every token of every request, and again alone for the
// reference (docs/performance.md has the figures).
var slowOnTheMock = map[string]string{
	"bug-b-rollouts-prefix-caching-on":  "768 requests, 0.70M engine and 0.95M reference tokens: 10 to 13 minutes",
	"bug-b-rollouts-prefix-caching-off": "768 requests, the same workload: 12 to 16 minutes",
	"v2-seed-units-53142":               "two 8800-token prompts on Qwen3.5-4B's stand-in: about 15 s",
	"v2-seed-units-53142-53798":         "the same requests, recomputed where the seed is right: about 40 s",
	"align-chunk-units":                 "two 8800-token prompts on Qwen3.5-4B's stand-in, in 2048-token chunks",
	"align-chunk-units-54076":           "the same requests, chunks at the Mamba block",
	"v2-seed-units-53142-fine":          "two 9300-token prompts on Qwen3-Next's stand-in",
	"v2-seed-units-53142-fine-53798":    "the same requests, the seed right",
}

// BenchmarkMockCacheBytes replays bug-b-rollouts-prefix-caching-on on the
// mock (about 10 minutes an iteration) and reports what its cache tensors
// held: the chunks it wrote and its chunk table, a count, not a clock
// (docs/performance.md, "The mock's cache memory").
func BenchmarkMockCacheBytes(b *testing.B) {
	f := filepath.Join(regressionsDir, "bug-b-rollouts-prefix-caching-on.yaml")
	var held int64
	for i := 0; i < b.N; i++ {
		st, err := setup.Load(f, []string{"backend.kind=mock"})
		if err != nil {
			b.Fatal(err)
		}
		rep, err := engine.RunSetup(st, engine.Options{})
		if err != nil {
			b.Fatal(err)
		}
		held = rep.Divergence.CacheBytes
	}
	b.ReportMetric(float64(held), "cache-bytes")
}

// holdsToSymbolic holds a mock run's report to the symbolic check that ran
// beside it: every request named as reading another request's bytes (or a
// column its state is not in) diverges from the reference, nothing else
// does (stale reads of never-written zeros may go either way), and a run
// with no stale read equals the reference exactly.
//
// Two stale reads name a request whose own numbers they cannot change: a
// write into a block its table no longer holds (the reader the write
// harms is named at its own read), and one in a step none of whose tokens
// the engine keeps (unseen: step and request, nil for none).
func holdsToSymbolic(t *testing.T, rep *report.Report, replay string, unseen map[[2]int64]bool) {
	t.Helper()
	if rep.Divergence == nil {
		t.Fatal("no divergence section")
	}
	var must, may []int64
	for _, v := range rep.Violations {
		if v.Name != "stale-slot-read" {
			continue
		}
		if v.PrevOwner >= 0 && !writesElsewhere(v) && !unseen[[2]int64{v.Step, v.RequestID}] {
			must = append(must, v.RequestID)
		} else {
			may = append(may, v.RequestID)
		}
	}
	var got []int64
	for _, d := range rep.DivergentRequests {
		got = append(got, d.RequestID)
	}
	slices.Sort(must)
	must = slices.Compact(must)
	for _, id := range got {
		if !slices.Contains(must, id) && !slices.Contains(may, id) {
			t.Errorf("request %d diverges (max |Δ| %.3g) without a stale read (stale readers %v; replay: statesim run %s --set backend.kind=mock)",
				id, maxDelta(rep, id), must, replay)
		}
	}
	for _, id := range must {
		if !slices.Contains(got, id) {
			t.Errorf("request %d read stale state but matches the reference (divergent %v; replay: statesim run %s --set backend.kind=mock)", id, got, replay)
		}
	}
	if len(must)+len(may) == 0 && rep.Divergence.MaxDelta != 0 {
		t.Errorf("clean run, yet max |Δ log-prob| %.3g: a healthy request equals its reference exactly", rep.Divergence.MaxDelta)
	}
}

func maxDelta(rep *report.Report, id int64) float64 {
	for _, d := range rep.DivergentRequests {
		if d.RequestID == id {
			return d.MaxDelta
		}
	}
	return 0
}

// writesElsewhere reports whether v is a write of v's request into a
// block its table no longer holds (align mode's state columns and
// boundary copy, backend/align_spec.go: Violation.Write), not a read.
func writesElsewhere(v invariant.Violation) bool { return v.Write }

// requestEnds is each request's last position plus one (prompt and
// output lengths) by request id, the workload's arrival order.
func requestEnds(st *setup.Setup) (map[int64]int, error) {
	src, err := workload.New(&st.Scenario.Workload, sim.NewStreams(st.Scenario.Seed), "")
	if err != nil {
		return nil, err
	}
	ends := map[int64]int{}
	for id := int64(0); ; id++ {
		a, ok, err := src.Next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return ends, nil
		}
		ends[id] = a.PromptLen + a.OutputLen
	}
}
