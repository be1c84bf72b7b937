package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := realMain(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestRunExitStatuses(t *testing.T) {
	code, out, _ := runCLI("run", "imposter")
	if code != exitViolations || !strings.Contains(out, "IMPOSTER: request") {
		t.Errorf("imposter: exit %d, output:\n%s", code, out)
	}
	if code, out, _ := runCLI("run", "imposter-fixed"); code != exitClean || strings.Contains(out, "VIOLATION") {
		t.Errorf("imposter-fixed: exit %d\n%s", code, out)
	}
	if code, _, errs := runCLI("run", "imposter", "--set", "engine.max_num_seqs=-3"); code != exitBadInput || !strings.Contains(errs, "field engine.max_num_seqs") {
		t.Errorf("bad --set: exit %d: %s", code, errs)
	}
	if code, _, _ := runCLI("frobnicate"); code != exitBadInput {
		t.Errorf("unknown command: exit %d", code)
	}
	if code, _, _ := runCLI("run"); code != exitBadInput {
		t.Errorf("missing scenario: exit %d", code)
	}
	if code, _, _ := runCLI("run", "imposter", "--no-such-flag"); code != exitBadInput {
		t.Errorf("unknown flag: exit %d", code)
	}
}

func TestRunBadFileNamesLine(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(p, []byte("name: x\nengine:\n  max_num_seqs: many\n"), 0o644)
	code, _, errs := runCLI("run", p)
	if code != exitBadInput || !strings.Contains(errs, "bad.yaml:3: field engine.max_num_seqs") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
}

func TestRunJSONAndTrace(t *testing.T) {
	tr := filepath.Join(t.TempDir(), "trace.jsonl")
	code, out, errs := runCLI("run", "imposter", "--json", "--trace", tr)
	if code != exitViolations {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rep struct {
		Violations []struct {
			Invariant string `json:"invariant"`
			Step      int64  `json:"step"`
			RequestID int64  `json:"request_id"`
			Slot      int64  `json:"slot"`
		} `json:"violations"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Violations) == 0 {
		t.Fatalf("json: %v, %d violations", err, len(rep.Violations))
	}
	data, err := os.ReadFile(tr)
	if err != nil {
		t.Fatal(err)
	}
	// Only the violation's step is decoded (and the first and last
	// lines): the trace is 75 MB, and the writer's JSON is the engine's
	// tests' business.
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	var step struct {
		Step int64 `json:"step"`
		Rows []struct {
			RequestID int64  `json:"request_id"`
			Path      string `json:"path"`
			Slots     []int  `json:"slots"`
		} `json:"rows"`
	}
	// The imposter's step is in the trace with its row on the decode path.
	v := rep.Violations[0]
	found := false
	at := []byte(fmt.Sprintf(`,"step":%d,`, v.Step))
	for i, l := range lines {
		if i != 0 && i != len(lines)-1 && !bytes.Contains(l[:min(len(l), 64)], at) {
			continue
		}
		if err := json.Unmarshal(l, &step); err != nil {
			t.Fatalf("trace line is not JSON: %v", err)
		}
		if step.Step == v.Step {
			for _, r := range step.Rows {
				if r.RequestID == v.RequestID && r.Path == "decode" {
					found = true
				}
			}
		}
	}
	if !found {
		t.Errorf("violation %+v not visible in the trace", v)
	}
}

func TestExplainCLI(t *testing.T) {
	if code, _, errs := runCLI("explain", "imposter"); code != exitBadInput || !strings.Contains(errs, "--request") {
		t.Errorf("missing --request: exit %d %s", code, errs)
	}
	// The command's wiring on a cut of the workload (the explain
	// package's tests read the whole imposter run).
	small := []string{"--set", "workload.num_prompts=64"}
	if code, _, errs := runCLI(append([]string{"explain", "imposter-fixed", "--request", "999999"}, small...)...); code != exitBadInput || !strings.Contains(errs, "does not exist") {
		t.Errorf("unknown request: exit %d %s", code, errs)
	}
	if code, out, _ := runCLI(append([]string{"explain", "imposter-fixed", "--request", "3"}, small...)...); code != exitClean || !strings.Contains(out, "request 3: arrived") {
		t.Errorf("clean request: exit %d\n%s", code, out)
	}
}
