package gpuconfirm

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
)

// The committed report is one run's: its Markdown is what Markdown renders
// from its JSON, so neither can be edited alone, and the JSON still
// decodes into today's types (an unknown or renamed field fails).
func TestCommittedReportRendersFromItsJSON(t *testing.T) {
	js, err := os.ReadFile("../docs/gpu-confirmation.json")
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile("../docs/gpu-confirmation.md")
	if err != nil {
		t.Fatal(err)
	}
	var c Confirmation
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("docs/gpu-confirmation.json: %v", err)
	}
	if got := Markdown(&c); got != string(md) {
		t.Errorf("docs/gpu-confirmation.md differs from the rendering of docs/gpu-confirmation.json: re-run `make confirm` and commit both")
	}
	// The verdicts recorded are the ones the rules give.
	for i := range c.Parity {
		if r := &c.Parity[i]; r.Note == "" && r.Pass != parityPass(r, c.Tolerance) {
			t.Errorf("parity %s: recorded %v, the rule gives %v", r.Label, r.Pass, !r.Pass)
		}
	}
	if c.BugA.Pass != bugAPass(&c.BugA) {
		t.Errorf("bug A: recorded %v, the rule gives %v", c.BugA.Pass, !c.BugA.Pass)
	}
	for i := range c.BugB {
		if r := &c.BugB[i]; !bugBPass(r) && c.BugBPass {
			t.Errorf("bug B %d-bit fails its rule but the report says PASS", r.Bits)
		}
	}
}
