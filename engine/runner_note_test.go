package engine_test

import (
	"strings"
	"testing"

	"statesim/engine"
	"statesim/internal/runtest"
)

// The report records the runner and says when +53059 is inert: under
// Model Runner V2 (the kept V2 counterexample) a note names the reason;
// its V1 twin has the same patches and no note.
func TestReportNotesInertGuard(t *testing.T) {
	for _, c := range []struct {
		file, runner string
		note         bool
	}{
		{"cudagraph-stale-qwen3-next-53059-v2.yaml", "v2", true},
		{"cudagraph-stale-qwen3-next-53059-v2-on-v1.yaml", "v1", false},
	} {
		rep := runtest.Run(t, "scenarios/regressions/"+c.file, engine.Options{}) // TestMain runs from the root
		var text strings.Builder
		if err := rep.WriteText(&text); err != nil {
			t.Fatal(err)
		}
		hasNote := len(rep.Notes) == 1 && strings.Contains(text.String(), "note: engine.patches +53059 changes nothing under model runner v2")
		if rep.ModelRunner != c.runner || hasNote != c.note || (!c.note && len(rep.Notes) > 0) {
			t.Errorf("%s: model_runner %q (want %q), notes %q (want a note: %v)", c.file, rep.ModelRunner, c.runner, rep.Notes, c.note)
		}
	}
}
