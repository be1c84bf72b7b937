package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"statesim/scenarios"
	"statesim/setup"
)

// traceScenario writes a CSV trace of rows and a scenario replaying it
// (extra: more workload keys), and loads it.
func traceScenario(t *testing.T, rows, extra string) (*scenarios.Scenario, error) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "t.csv"), []byte("timestamp,input_tokens,output_tokens\n"+rows), 0o644); err != nil {
		t.Fatal(err)
	}
	doc := "name: t\nmodel: {preset: tiny-hybrid}\nengine: {num_gpu_blocks_override: 4096}\n" +
		"workload: {kind: trace, path: t.csv, time_field: timestamp, prompt_field: input_tokens, output_field: output_tokens, prompt_len: {dist: trace}, output_len: {dist: trace}" + extra + "}\n"
	y := filepath.Join(dir, "t.yaml")
	if err := os.WriteFile(y, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return scenarios.Load(y, nil)
}

// A row asking for 0 output tokens is a request vLLM refuses
// (max_tokens < 1): rejected alone, and under strict the run fails; it
// used to run as 1 token.
func TestZeroOutputRowRejected(t *testing.T) {
	rows := "1,16,2\n2,16,0\n3,16,2\n"
	sc, err := traceScenario(t, rows, "")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(sc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Requests != 2 || len(rep.Rejected) != 1 || rep.Rejected[0].Reason != "empty_output" || rep.Rejected[0].FirstLine != 3 {
		t.Fatalf("requests %d, rejected %+v; want 2 served and line 3 rejected as empty_output", rep.Requests, rep.Rejected)
	}
	sc, err = traceScenario(t, rows, ", strict: true")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(sc, Options{})
	var ie *scenarios.InputError
	if !errors.As(err, &ie) || ie.Line != 3 || !strings.Contains(err.Error(), "0 output tokens") {
		t.Fatalf("strict: %v, want an input error at line 3", err)
	}
}

// A trace whose requests all arrive at one instant is held up to
// MaxInFlight requests and refused one past it, before it is held.
func TestInFlightBound(t *testing.T) {
	defer func(n int) { MaxInFlight = n }(MaxInFlight)
	MaxInFlight = 8
	dir := t.TempDir()
	load := func(rows int) *scenarios.Scenario {
		t.Helper()
		var b strings.Builder
		b.WriteString("timestamp,input_tokens,output_tokens\n")
		for i := 0; i < rows; i++ {
			b.WriteString("5,16,2\n")
		}
		p := filepath.Join(dir, fmt.Sprintf("t%d.csv", rows))
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		y := filepath.Join(dir, fmt.Sprintf("t%d.yaml", rows))
		doc := fmt.Sprintf("name: t\nmodel: {preset: tiny-hybrid}\nengine: {num_gpu_blocks_override: 4096}\n"+
			"workload: {kind: trace, path: t%d.csv, time_field: timestamp, prompt_field: input_tokens, output_field: output_tokens, prompt_len: {dist: trace}, output_len: {dist: trace}}\n", rows)
		if err := os.WriteFile(y, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		sc, err := scenarios.Load(y, nil)
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	rep, err := Run(load(8), Options{})
	if err != nil {
		t.Fatalf("8 requests at one instant, bound 8: %v", err)
	}
	if rep.Finished != 8 {
		t.Fatalf("finished %d of 8", rep.Finished)
	}
	_, err = Run(load(9), Options{})
	var ie *scenarios.InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "8 have arrived and not finished") || !strings.Contains(err.Error(), ":10") {
		t.Fatalf("9 requests at one instant, bound 8: got %v, want an input error naming the 9th request's line", err)
	}
}

// The report lists the settled start-up warnings (setup.Setup.Warnings,
// whose rules setup's TestStartupWarnings holds), in their order.
func TestReportListsTheSetupWarnings(t *testing.T) {
	doc := "name: m\nmodel: {preset: tiny-hybrid}\nengine: {num_gpu_blocks_override: 512, vllm_version: v0.31, mamba_cache_mode: all, enable_prefix_caching: false, speculative: {method: ngram, num_speculative_tokens: 2, accepted: 1, acceptance_rate: 0.5}}\nworkload: {kind: poisson, rate: 10, count: 2}\n"
	st, err := setup.Parse([]byte(doc), "m.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := RunSetup(st, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Warnings) != 2 || strings.Join(rep.Warnings, "\n") != strings.Join(st.Warnings, "\n") {
		t.Fatalf("report warnings %q, settled %q", rep.Warnings, st.Warnings)
	}
}
