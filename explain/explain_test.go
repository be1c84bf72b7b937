package explain

import (
	"bytes"
	"strings"
	"testing"

	"statesim/engine"
	"statesim/scenarios"
	"statesim/setup"
)

// Explain follows the imposter from its first (stale) decode to its end.
func TestExplainImposter(t *testing.T) {
	sc0, err := scenarios.Load("imposter", nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := engine.Run(sc0, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Imposters) == 0 {
		t.Fatal("no imposter to explain")
	}
	im := rep.Imposters[0]
	sc, _ := setup.Load("imposter", nil)
	life, _, err := Explain(sc, im.RequestID)
	if err != nil {
		t.Fatal(err)
	}
	if !life.Found || len(life.Steps) < 2 {
		t.Fatalf("life %+v", life)
	}
	first := life.Steps[0]
	if first.Step != im.Step || first.Computed != 0 || first.Path != "decode" || !first.Stale || first.Slots[0] != int32(im.Slot) {
		t.Errorf("first step %+v, imposter %+v", first, im)
	}
	if life.CorruptAt != im.Step || life.Outputs == 0 || len(life.Violations) == 0 {
		t.Errorf("corrupt at %d outputs %d violations %d", life.CorruptAt, life.Outputs, len(life.Violations))
	}
	var b bytes.Buffer
	life.WriteText(&b)
	if !strings.Contains(b.String(), "STALE READ") || !strings.Contains(b.String(), "NEW REQUEST ON THE DECODE PATH") {
		t.Errorf("text does not point at the stale read:\n%s", b.String())
	}
	// A clean request of the same run has no stale step.
	life, _, _ = Explain(sc, 0)
	for _, s := range life.Steps {
		if s.Stale {
			t.Errorf("request 0 step %d marked stale", s.Step)
		}
	}
}
