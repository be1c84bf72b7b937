package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
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
	r := Report{Imposters: make([]Imposter, 2), ImpostersTotal: 150}
	var b bytes.Buffer
	r.WriteText(&b)
	if !strings.Contains(b.String(), "... and 148 more imposters (150 in all; --json lists the first 2)") {
		t.Errorf("text:\n%s", b.String())
	}
}

// A report names the state layers and the decode kernel of their kind; a
// Mamba model reads as it always has.
func TestStateKindWording(t *testing.T) {
	im := []Imposter{{RequestID: 1, Slot: 1, PrevOwner: 0, PrevTokens: 5, NumScheduled: 1}}
	cases := []struct {
		kind    string
		tensors []string
		want    []string
		absent  string
	}{
		{"mamba1", nil, []string{"36 Mamba), d_inner 8, d_state 16", "3 Mamba) of", "the Mamba decode kernel read", "its SSM state after 5 tokens"}, "state conv"},
		{"mamba2", nil, []string{"36 Mamba), d_inner 8, d_state 16", "the Mamba decode kernel read"}, "state conv"},
		{"gated_delta_net", []string{"conv [3 8] bfloat16", "recurrent [2 4 4] bfloat16"},
			[]string{"36 Gated DeltaNet), state conv [3 8] bfloat16 + recurrent [2 4 4] bfloat16", "3 Gated DeltaNet) of",
				"the GDN decode kernel (fused_recurrent_gated_delta_rule) read", "its recurrent state after 5 tokens"}, "d_state"},
		{"kda", []string{"x [1]"}, []string{"36 KDA)", "the KDA decode kernel"}, "Mamba"},
	}
	for _, c := range cases {
		r := Report{Model: Model{Layers: 48, AttentionLayers: 12, MambaLayers: 36, DInner: 8, DState: 16, StateKind: c.kind, StateTensors: c.tensors},
			Cache: Cache{MambaGroups: 3, AttentionGroups: 1}, Imposters: im, ImpostersTotal: 1}
		var b bytes.Buffer
		r.WriteText(&b)
		for _, w := range c.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s: no %q in\n%s", c.kind, w, b.String())
			}
		}
		if strings.Contains(b.String(), c.absent) {
			t.Errorf("%s: %q in\n%s", c.kind, c.absent, b.String())
		}
	}
}
