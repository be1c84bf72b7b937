package prop

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/leanovate/gopter"

	"statesim/model"
	"statesim/trace"
)

// TestGeneratedScenariosStayInBounds: every draw respects the config and
// builds a valid scenario whose pool fits its largest request.
func TestGeneratedScenariosStayInBounds(t *testing.T) {
	for _, c := range []Config{DefaultConfig(), BugA("v0.13"), BugB()} {
		for seed := int64(1); seed <= 200; seed++ {
			p := Sample(c, seed)
			if n := len(p.Requests); n < c.MinRequests || n > c.MaxRequests {
				t.Fatalf("%d requests outside [%d, %d]", n, c.MinRequests, c.MaxRequests)
			}
			for _, r := range p.Requests {
				if r.Prompt < c.MinPrompt || r.Prompt > c.MaxPrompt || r.Output < c.MinOutput || r.Output > c.MaxOutput || r.GapUS < 0 || r.GapUS > c.MaxGapUS {
					t.Fatalf("request %+v outside the config", r)
				}
			}
			if p.MaxNumBatchedTokens < c.MinBudget || p.MaxNumBatchedTokens > c.MaxBudget || p.StateIndexBits < c.MinBits || p.StateIndexBits > c.MaxBits {
				t.Fatalf("knobs outside the config: %s", p)
			}
			sc, err := p.Scenario("x", "x.jsonl")
			if err != nil {
				t.Fatal(err)
			}
			l := sc.Model.Shape.Layout(sc.Engine.BlockSize)
			for _, r := range p.Requests {
				need := l.NumMambaGroups() + l.NumAttnGroups()*ceilDiv(r.Prompt+r.Output, l.BlockSize)
				if need > sc.Engine.NumGPUBlocksOverride-1 {
					t.Fatalf("%s: a request needs %d blocks, the pool has %d", p, need, sc.Engine.NumGPUBlocksOverride-1)
				}
			}
		}
	}
}

// TestTraceJSONLReadsBack: the requests file is read by the trace reader
// with the same arrival times and lengths.
func TestTraceJSONLReadsBack(t *testing.T) {
	p := &Params{Requests: []Request{{GapUS: 999, Prompt: 5, Output: 1}, {GapUS: 1_500_001, Prompt: 7, Output: 3}, {GapUS: 0, Prompt: 2, Output: 9}}}
	rd, err := trace.NewJSONL(bytes.NewReader(p.TraceJSONL()), "t.jsonl", trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []trace.Record{{Line: 1, ArrivalNS: 0, PromptTokens: 5, OutputTokens: 1},
		{Line: 2, ArrivalNS: 1_500_001_000, PromptTokens: 7, OutputTokens: 3},
		{Line: 3, ArrivalNS: 1_500_001_000, PromptTokens: 2, OutputTokens: 9}}
	for i, w := range want {
		got, err := rd.Next()
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if got != w {
			t.Fatalf("record %d: %+v, want %+v", i, got, w)
		}
	}
	if _, err := rd.Next(); err != io.EOF {
		t.Fatalf("want EOF after 3 records, got %v", err)
	}
}

// TestIntRangeShrinksToLowerBound: from any value the shrinker offers
// the lower bound first, so a search never stalls above it.
func TestIntRangeShrinksToLowerBound(t *testing.T) {
	g := intRange(3, 100)
	res := g(gopter.DefaultGenParameters())
	for _, v := range []int{4, 5, 17, 100} {
		s := res.Shrinker(v)
		first, ok := s()
		if !ok || first.(int) != 3 {
			t.Fatalf("from %d the first candidate is %v, want 3", v, first)
		}
		for c, ok := s(); ok; c, ok = s() {
			if c.(int) < 3 || c.(int) >= v {
				t.Fatalf("from %d: candidate %d outside [3, %d)", v, c, v)
			}
		}
	}
	if _, ok := res.Shrinker(3)(); ok {
		t.Fatal("the lower bound still shrinks")
	}
}

func TestConfigValidate(t *testing.T) {
	for name, mut := range map[string]func(*Config){
		"preset":   func(c *Config) { c.Presets = []string{"gpt-9"} },
		"version":  func(c *Config) { c.Versions = []string{"v9"} },
		"policy":   func(c *Config) { c.Policies = []string{"lifo"} },
		"empty":    func(c *Config) { c.Backends = nil },
		"backend":  func(c *Config) { c.Backends = []string{"tpu"} },
		"requests": func(c *Config) { c.MinRequests = 0 },
		"bits":     func(c *Config) { c.MinBits = 8 },
		"budget":   func(c *Config) { c.MinBudget, c.MaxBudget = 5, 4 },
	} {
		c := DefaultConfig()
		mut(&c)
		if c.Validate() == nil {
			t.Errorf("%s: bad config accepted", name)
		}
	}
	c := DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestParseExpect(t *testing.T) {
	got, err := ParseExpect([]byte("# hello\n# expect: stale-slot-read liveness\nname: x\n"))
	if err != nil || strings.Join(got, ",") != "stale-slot-read,liveness" {
		t.Fatalf("got %v, %v", got, err)
	}
	for _, bad := range []string{"name: x\n", "# expect:\n", "# expect: stale-slot-reed\n", "# expect: clean liveness\n"} {
		if _, err := ParseExpect([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestByName(t *testing.T) {
	all, err := ByName(nil)
	if err != nil || len(all) != len(All()) {
		t.Fatalf("default selection: %d, %v", len(all), err)
	}
	if _, err := ByName([]string{"liveness", "nope"}); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("unknown property: %v", err)
	}
	ps, err := ByName([]string{"stale-slot-read/no-preemption"})
	if err != nil || len(ps) != 1 || ps[0].Name != "stale-slot-read/no-preemption" {
		t.Fatalf("narrowed property: %v, %v", ps, err)
	}
}

// TestWithoutPreemptionPasses: the narrowed property accepts a run that
// preempted, whatever else it did, and judges the others as before.
func TestWithoutPreemptionPasses(t *testing.T) {
	dir := t.TempDir()
	r := NewRunner(dir, nil)
	calls := 0
	base := Property{Name: "always-fails", Check: func(*Runner, *Params) error { calls++; return errors.New("no") }}
	q := WithoutPreemption(base)
	if q.Name != "always-fails/no-preemption" {
		t.Fatalf("name %q", q.Name)
	}
	// One request in a pool that fits it never preempts.
	calm := &Params{Requests: []Request{{Prompt: 4, Output: 2}}, MaxNumBatchedTokens: 8, MaxNumSeqs: 1, StateIndexBits: 64,
		Seed: 1, Preset: "tiny-hybrid", Version: "fixed", Policy: "fcfs", ChunkedPrefill: true, Backend: "symbolic"}
	if q.Check(r, calm) == nil || calls != 1 {
		t.Fatalf("a calm run skipped the base property (calls %d)", calls)
	}
	// Two long requests in a pool that fits one and a bit: the second is
	// admitted with a 2-token chunk, then preempted when it grows.
	busy := *calm
	busy.Requests = []Request{{Prompt: 60, Output: 40}, {Prompt: 60, Output: 40}}
	busy.MaxNumSeqs = 2
	busy.MaxNumBatchedTokens = 62
	busy.ExtraBlocks = 2
	if o := r.Run(&busy); o.Err != nil || o.Report.Preemptions == 0 {
		t.Fatalf("the busy run did not preempt: %v", o.Err)
	}
	if err := q.Check(r, &busy); err != nil || calls != 1 {
		t.Fatalf("a preempting run was judged: %v (calls %d)", err, calls)
	}
}

// TestPanicIsACounterexample: a check that panics on some scenarios is
// a failing property with a shrunk scenario, not a crashed search.
func TestPanicIsACounterexample(t *testing.T) {
	r := NewRunner(t.TempDir(), nil)
	p := Property{Name: "no-long-prompts", Check: func(_ *Runner, x *Params) error {
		for _, q := range x.Requests {
			if q.Prompt > 100 {
				panic("prompt too long")
			}
		}
		return nil
	}}
	res, err := Check(r, DefaultConfig(), p, Options{Seed: 1, Trials: 200})
	if err != nil {
		t.Fatal(err)
	}
	if res.Holds || res.Err == nil || !strings.Contains(res.Err.Error(), "panic: prompt too long") {
		t.Fatalf("holds=%v err=%v", res.Holds, res.Err)
	}
	if len(res.Shrunk.Requests) != 1 || res.Shrunk.Requests[0].Prompt != 101 {
		t.Fatalf("shrunk to %s, want one request of 101 tokens", res.Shrunk)
	}
}

// TestChoiceShrinksTowardsTheFront: choices shrink to earlier, distinct
// entries only, and every preset is listed for the default config.
func TestChoiceShrinksTowardsTheFront(t *testing.T) {
	res := choice([]any{"a", "a", "b", "c"})(gopter.DefaultGenParameters())
	var got []any
	s := res.Shrinker("c")
	for v, ok := s(); ok; v, ok = s() {
		got = append(got, v)
	}
	if len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("shrinks of c: %v, want [a b]", got)
	}
	if _, ok := res.Shrinker("a")(); ok {
		t.Fatal("the first choice still shrinks")
	}
	for _, p := range model.PresetNames() {
		if !slices.Contains(SimplestFirst, p) {
			t.Errorf("preset %s missing from SimplestFirst", p)
		}
	}
	if len(SimplestFirst) != len(model.PresetNames()) {
		t.Errorf("SimplestFirst has %d presets, the model %d", len(SimplestFirst), len(model.PresetNames()))
	}
}

// A written counterexample is loaded and replayed as `statesim run` would:
// a header that expects what the file does not do is refused.
func TestWrittenCounterexampleReplays(t *testing.T) {
	dir := t.TempDir()
	r := NewRunner(t.TempDir(), nil)
	calm := &Params{Requests: []Request{{Prompt: 4, Output: 2}}, MaxNumBatchedTokens: 8, MaxNumSeqs: 1, StateIndexBits: 64,
		Seed: 1, Preset: "tiny-hybrid", Version: "fixed", Policy: "fcfs", ChunkedPrefill: true, Backend: "symbolic"}
	w, err := Write(r, Result{Property: "x", Original: calm, Shrunk: calm}, dir, "calm", "")
	if err != nil || strings.Join(w.Expect, " ") != "clean" {
		t.Fatalf("write: %v, expect %v", err, w)
	}
	w.Expect = []string{"stale_slot_read"}
	if err := replays(w); err == nil || !strings.Contains(err.Error(), "replays with clean") {
		t.Errorf("a header the file does not replay: %v", err)
	}
}
