package plot

import (
	"image/png"
	"testing"

	"statesim/internal/testtier"
)

// The tests' temporary files stay in memory where the machine allows, and
// their PNG charts are not compressed (checkFiles decodes the pixels; the
// compression, the same for every chart, was half the package's time).
func TestMain(m *testing.M) {
	pngEncoder.CompressionLevel = png.NoCompression
	testtier.Main(m)
}
