package engine

import (
	"os"
	"testing"

	"statesim/internal/testtier"
)

// Built-in scenarios name repository files (azure-conv's trace) relative
// to the repository root.
func TestMain(m *testing.M) {
	if err := os.Chdir(".."); err != nil {
		panic(err)
	}
	testtier.Main(m)
}
