package testtier

import (
	"os"
	"testing"
)

// Main is a package's TestMain body: MemoryTempDir, then the tests.
func Main(m *testing.M) {
	MemoryTempDir()
	os.Exit(m.Run())
}
