package explain

import (
	"testing"

	"statesim/setup"
)

// BenchmarkExplain is one explained run of the imposter scenario: the
// engine with step.Reads detail, following request 3.
func BenchmarkExplain(b *testing.B) {
	for i := 0; i < b.N; i++ {
		sc, err := setup.Load("imposter", nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := Explain(sc, 3); err != nil {
			b.Fatal(err)
		}
	}
}
