package sweep

import (
	"testing"

	"statesim/internal/testtier"
)

// The tests' temporary files stay in memory where the machine allows.
func TestMain(m *testing.M) { testtier.Main(m) }
