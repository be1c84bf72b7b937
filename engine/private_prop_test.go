package engine_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/leanovate/gopter"
	gprop "github.com/leanovate/gopter/prop"

	"statesim/engine"
	"statesim/internal/testtier"
	"statesim/prop"
)

// TestPrivateTailsProperty holds the private-tail shortcut to vLLM's
// table (every cached block listed) over the property search's matrix
// with prefix caching on: every release from v0.13, every model with
// state layers, the release's mode, align and all over shared hash_ids
// prefixes, speculative decoding, async scheduling and CUDA graphs, on
// pools sized to preempt. Each scenario runs both ways and must agree
// in reports, stepped records, finished requests and final cache. The
// test also requires that the draws reached what could tell the two
// apart: private blocks cached, and preemptions with them.
func TestPrivateTailsProperty(t *testing.T) {
	t.Parallel()
	shared := prop.Matrix(prop.DefaultConfig())
	shared.CacheModes = []string{"on", "align", "all"}
	// Past a few blocks of the hybrids' raised sizes: only full blocks
	// are cached, private or not.
	shared.MaxPrompt, shared.MaxOutput = 1500, 400
	// What keeps a hybrid's cache off stays out of most draws: prefills
	// unchunked, speculative decoding but in align mode.
	shared.ChunkedPrefill = []bool{true}
	shared.SpecMethods, shared.SpecAlign = []string{"off", "off", "mtp"}, true
	// Pools a few blocks over the largest request, and more requests
	// at once: preemptions, and requests finding their own blocks again.
	shared.MaxExtraBlocks, shared.MaxRequests, shared.MaxSeqs, shared.MaxGapUS = 6, 10, 8, 2_000
	// Without hash_ids every block is private (the shared draws' prompts
	// are all hash_ids, their own ones included).
	own := prop.Prefix(shared, 64, 0, "on", "align", "all")
	dir := t.TempDir()
	params := gopter.DefaultTestParametersWithSeed(15)
	params.MinSuccessfulTests = testtier.Sized(100, 1000)
	props := gopter.NewProperties(params)
	n, private, preempted := 0, 0, 0
	same := func(p *prop.Params) (bool, error) {
		n++
		path := filepath.Join(dir, fmt.Sprintf("s%d.jsonl", n))
		if err := os.WriteFile(path, p.TraceJSONL(), 0o644); err != nil {
			return false, err
		}
		sc, err := p.Scenario(fmt.Sprintf("private-%d", n), path)
		if err != nil {
			return false, err
		}
		ref, err := engine.RunListing(sc, true)
		if err != nil {
			return false, err
		}
		got, err := engine.RunListing(sc, false)
		if err != nil {
			return false, err
		}
		if got.Private > 0 {
			private++
		}
		if got.Published > 0 {
			preempted++
		}
		if !bytes.Equal(got.Outcome, ref.Outcome) {
			return false, fmt.Errorf("%s: reports, records or final cache differ from listing every block", p)
		}
		return ref.Private == 0, nil
	}
	props.Property("private tails change nothing, shared prefixes", gprop.ForAll(same, prop.Gen(shared)))
	props.Property("private tails change nothing, own prompts", gprop.ForAll(same, prop.Gen(own)))
	props.TestingRun(t)
	t.Logf("%d scenarios: %d cached private blocks, %d listed some at a preemption", n, private, preempted)
	if private < n/4 || preempted < 5 {
		t.Errorf("of %d scenarios %d cached private blocks and %d listed some at a preemption: the draws no longer test the shortcut", n, private, preempted)
	}
}
