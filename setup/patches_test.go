package setup_test

import (
	"strings"
	"testing"

	"statesim/scenarios"
	"statesim/sched"
	"statesim/setup"
)

func patched(version, patches string) string {
	return strings.Replace(good, "  vllm_version: v0.14\n", "  vllm_version: "+version+"\n  patches: "+patches+"\n", 1)
}

func TestPatchesApplyOnTopOfTheRelease(t *testing.T) {
	st, err := setup.Parse([]byte(patched("v0.31", "[-51565]")), "t.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	v := st.Version
	if v.String() != "v0.31-51565" || v.Release() != sched.V031 || v.Behaviour().GDN != sched.V022.Behaviour().GDN {
		t.Errorf("v0.31 [-51565] parsed as %s (release %s, GDN split %+v)", v, v.Release(), v.Behaviour().GDN)
	}
	out, err := scenarios.Marshal(st.Scenario)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `patches: ["-51565"]`) {
		t.Fatalf("Marshal lost the patches:\n%s", out)
	}
	back, err := setup.Parse(out, "m.yaml", nil)
	if err != nil || back.Version != v {
		t.Fatalf("round trip: %v", err)
	}
	// A lone string is a list of one; an empty list is no patch.
	if st, err := setup.Parse([]byte(patched("v0.22", "+51565")), "t.yaml", nil); err != nil || st.Version.String() != "v0.22+51565" {
		t.Errorf("lone patch: %v", err)
	}
	if st, err := setup.Parse([]byte(patched("v0.22", "[]")), "t.yaml", nil); err != nil || st.Version != sched.V022 {
		t.Errorf("empty patches: %v", err)
	}
}

// Bad patches are file:line: field: problem, never a panic.
func TestPatchErrorsNameFileLineAndField(t *testing.T) {
	for _, c := range []struct{ version, patches, want string }{
		{"v0.31", "[-42430]", "t.yaml:5: field engine.patches: PR #51565 (GDN split forces stateless rows) builds on PR #42430, which v0.31-42430 lacks"},
		{"v0.19", "[+51565]", "t.yaml:5: field engine.patches: PR #51565 (GDN split forces stateless rows) builds on PR #42430"},
		{"v0.31", "[+51565]", "t.yaml:5: field engine.patches: +51565: v0.31 already contains PR #51565"},
		{"v0.31", "[+12345]", `t.yaml:5: field engine.patches: "+12345": not a PR statesim models`},
		{"v0.31", "[51565]", `t.yaml:5: field engine.patches: "51565": want +N or -N`},
		{"v0.31", "[+53059, +53059]", "t.yaml:5: field engine.patches: +53059: PR #53059 patched twice"},
		{"v0", "[-51565]", "t.yaml:5: field engine.patches: patches apply to V1 releases"},
		{"v0.31", "[[-51565]]", "t.yaml:5: field engine.patches[0]: want a string, got a list"},
	} {
		_, err := setup.Parse([]byte(patched(c.version, c.patches)), "t.yaml", nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: want %q, got %v", c.version, c.patches, c.want, err)
		}
	}
}
