package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"statesim/backend"
)

// Rejections are counted by reason in first-seen order, the first one's
// message kept; the text and JSON both list them.
func TestRejections(t *testing.T) {
	var r Report
	r.Reject("empty_prompt", 3, "t.csv:3: field p: 0 tokens")
	r.Reject(RejectPromptTooLong, 4, "prompt of 70 tokens")
	r.Reject("empty_prompt", 9, "t.csv:9: field p: 0 tokens")
	if r.TotalRejected() != 3 || len(r.Rejected) != 2 || r.Rejected[0].Count != 2 || r.Rejected[0].FirstLine != 3 {
		t.Fatalf("rejected %+v", r.Rejected)
	}
	var b bytes.Buffer
	r.WriteText(&b)
	if !strings.Contains(b.String(), "rejected at admission: 3 requests") || !strings.Contains(b.String(), "empty_prompt     2, first: t.csv:3: field p: 0 tokens") {
		t.Errorf("text:\n%s", b.String())
	}
	var j struct {
		Rejected []Rejection `json:"rejected"`
	}
	b.Reset()
	r.WriteJSON(&b)
	if json.Unmarshal(b.Bytes(), &j); len(j.Rejected) != 2 || j.Rejected[1].Reason != RejectPromptTooLong {
		t.Errorf("json: %s", b.String())
	}
	// No rejections: nothing in either form.
	var clean Report
	b.Reset()
	clean.WriteJSON(&b)
	if strings.Contains(b.String(), "rejected") {
		t.Errorf("a run without rejections lists them: %s", b.String())
	}
}

// The imposters list is bounded; the text says how many it left out.
func TestImpostersTotalInText(t *testing.T) {
	r := Report{Imposters: make([]backend.Imposter, 2), ImpostersTotal: 150}
	var b bytes.Buffer
	r.WriteText(&b)
	if !strings.Contains(b.String(), "... and 148 more imposters (150 in all; --json lists the first 2)") {
		t.Errorf("text:\n%s", b.String())
	}
}
