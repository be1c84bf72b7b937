package workload

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"statesim/sim"
	"statesim/trace"
)

func drain(t *testing.T, s *Spec) []Arrival {
	t.Helper()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	src, err := New(s, sim.NewStreams(1), "")
	if err != nil {
		t.Fatal(err)
	}
	var out []Arrival
	for {
		a, ok, err := src.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		out = append(out, a)
	}
	if !src.Done() {
		t.Error("source not done after its last arrival")
	}
	return out
}

func synth(count int, scale float64) *Spec {
	return &Spec{Kind: "synthetic", Count: count, Rate: 10, PromptMedian: 1020, OutputMedian: 129, RateScale: scale,
		PromptLen: Dist{Kind: "trace"}, OutputLen: Dist{Kind: "trace"}}
}

func TestSyntheticIsSeededAndScaled(t *testing.T) {
	a, b := drain(t, synth(500, 0)), drain(t, synth(500, 0))
	if len(a) != 500 {
		t.Fatalf("%d arrivals, want 500", len(a))
	}
	if src, _ := New(synth(500, 0), sim.NewStreams(1), ""); src.Total() != 500 {
		t.Errorf("Total %d, want 500", src.Total())
	}
	for i := range a {
		if !reflect.DeepEqual(a[i], b[i]) {
			t.Fatalf("arrival %d differs between runs: %+v vs %+v", i, a[i], b[i])
		}
	}
	// 500 arrivals at 10/s span about 50 s; at rate_scale 2, about 25 s.
	if end := a[len(a)-1].At.Seconds(); end < 40 || end > 60 {
		t.Errorf("500 arrivals at 10/s end at %.1f s", end)
	}
	if end := drain(t, synth(500, 2))[499].At.Seconds(); end < 20 || end > 30 {
		t.Errorf("at rate_scale 2 they end at %.1f s", end)
	}
}

func TestTraceJSONLFieldsAndLimit(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "t.jsonl")
	data := `{"t": 0, "in": 10, "out": 3}` + "\n" + `{"t": 1500, "in": 20, "out": 0}` + "\n" + `{"t": 3000, "in": 30, "out": 5}` + "\n"
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &Spec{Kind: "trace", Path: p, TimeField: "t", PromptField: "in", OutputField: "out", TimeUnit: "ms",
		RateScale: 3, Limit: 2, PromptLen: Dist{Kind: "trace"}, OutputLen: Dist{Kind: "trace"}}
	got := drain(t, s)
	if len(got) != 2 {
		t.Fatalf("limit 2 gave %d arrivals", len(got))
	}
	// 1.5 s at three times the rate is 0.5 s; zero output tokens are a
	// request vLLM refuses (max_tokens < 1), rejected alone.
	if got[1].At != 500*sim.Millisecond || got[1].Reject != trace.RejectEmptyOutput || got[1].Line != 2 {
		t.Errorf("second arrival %+v", got[1])
	}
}

func TestAzureSampleReplays(t *testing.T) {
	s := &Spec{Kind: "trace", Path: "../scenarios/traces/AzureLLMInferenceTrace_conv.csv", Limit: 100,
		PromptLen: Dist{Kind: "trace"}, OutputLen: Dist{Kind: "trace"}}
	got := drain(t, s)
	if len(got) != 100 || got[0].At != 0 || got[0].PromptLen != 374 || got[0].OutputLen != 44 {
		t.Fatalf("%d arrivals, first %+v", len(got), got[0])
	}
}

func TestValidateNamesTheField(t *testing.T) {
	for _, c := range []struct {
		spec Spec
		want string
	}{
		{Spec{Kind: "synthetic", Count: 5, Rate: 1, OutputMedian: 3}, "prompt_median"},
		{Spec{Kind: "synthetic", Count: 5, Rate: 0, PromptMedian: 3, OutputMedian: 3}, "rate"},
		{Spec{Kind: "synthetic", Count: 5, Rate: math.Inf(1), PromptMedian: 3, OutputMedian: 3}, "rate"},
		{Spec{Kind: "synthetic", Count: 5, Rate: 1, PromptMedian: 3, OutputMedian: 3, RateScale: math.NaN()}, "rate_scale"},
		{Spec{Kind: "trace", Path: "x.csv", RateScale: math.Inf(1)}, "rate_scale"},
		{Spec{Kind: "batches", NumPrompts: 2, BatchSize: 1, RateScale: 2, PromptLen: Dist{Kind: "constant", Value: 1}, OutputLen: Dist{Kind: "constant", Value: 1}}, "rate_scale"},
	} {
		err := c.spec.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), c.want+":") {
			t.Errorf("%+v: error %v, want one about %s", c.spec, err, c.want)
		}
	}
}

// A synthetic trace's arrival span counts its rate_scale: a tiny scale
// would overflow the int64 ns gap.
func TestSyntheticSpanBounded(t *testing.T) {
	s := Spec{Kind: "synthetic", Rate: 10, Count: 100, PromptMedian: 10, OutputMedian: 10, RateScale: 1e-300,
		PromptLen: Dist{Kind: "trace"}, OutputLen: Dist{Kind: "trace"}}
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "rate: 1e-299 requests/s (× rate_scale) makes 100 arrivals span") {
		t.Errorf("tiny rate_scale: %v", err)
	}
	s.RateScale = 2
	if err := s.Validate(); err != nil {
		t.Errorf("rate_scale 2: %v", err)
	}
}

// A trace replays at most maxTraceRequests records: at the bound it ends
// cleanly, one record past it is an error naming the line.
func TestTraceRequestBound(t *testing.T) {
	defer func(n int) { maxTraceRequests = n }(maxTraceRequests)
	maxTraceRequests = 3
	dir := t.TempDir()
	write := func(rows int) string {
		p := filepath.Join(dir, fmt.Sprintf("t%d.csv", rows))
		data := "timestamp,input_tokens,output_tokens\n" + strings.Repeat("1,10,2\n", rows)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	spec := func(p string) *Spec {
		return &Spec{Kind: "trace", Path: p, TimeField: "timestamp", PromptField: "input_tokens", OutputField: "output_tokens",
			PromptLen: Dist{Kind: "trace"}, OutputLen: Dist{Kind: "trace"}}
	}
	if got := drain(t, spec(write(3))); len(got) != 3 {
		t.Fatalf("3 records, bound 3: %d arrivals", len(got))
	}
	src, err := New(spec(write(4)), sim.NewStreams(1), "")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		_, ok, err := src.Next()
		if err != nil {
			if i != 3 || !strings.Contains(err.Error(), ":5: more than 3 requests") {
				t.Fatalf("after %d arrivals: %v", i, err)
			}
			return
		}
		if !ok {
			t.Fatalf("4 records, bound 3: ended after %d without an error", i)
		}
	}
}
