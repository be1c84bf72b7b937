package engine

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"testing"

	"statesim/scenarios"
)

// runBytes returns the --json report and a hash of the --trace stream
// (traces of long runs are tens of megabytes).
func runBytes(t *testing.T, name string, sets ...string) (report, trace []byte) {
	t.Helper()
	return runTraced(t, name, false, sets...)
}

// runTraced is runBytes with the check shortcuts on or off (plain).
func runTraced(t *testing.T, name string, plain bool, sets ...string) (report, trace []byte) {
	t.Helper()
	sc, err := scenarios.Load(name, sets)
	if err != nil {
		t.Fatal(err)
	}
	var js bytes.Buffer
	h := traceHash()
	n := &countWriter{w: h}
	rep, err := Run(sc, Options{Trace: n, plainChecks: plain})
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if n.n == 0 {
		t.Fatalf("%s: empty trace", name)
	}
	return js.Bytes(), h.Sum(nil)
}

// tracedRuns keeps runBytes' results of runs that two tests make the
// same way (TestSameSeedSameBytes, TestShortcutsChangeNothing): one run
// each, the second test compares another run with it.
var tracedRuns struct {
	sync.Mutex
	m map[string][2][]byte
}

// sharedRunBytes is runBytes for a run another test may have made.
func sharedRunBytes(t *testing.T, name string, sets ...string) (report, trace []byte) {
	t.Helper()
	key := name + " " + strings.Join(sets, " ")
	tracedRuns.Lock()
	defer tracedRuns.Unlock()
	if r, ok := tracedRuns.m[key]; ok {
		return r[0], r[1]
	}
	report, trace = runBytes(t, name, sets...)
	if tracedRuns.m == nil {
		tracedRuns.m = map[string][2][]byte{}
	}
	tracedRuns.m[key] = [2][]byte{report, trace}
	return report, trace
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return c.w.Write(p)
}

// Same scenario, same seed: byte-identical --json and --trace; another
// seed: a different run (so the comparison can fail).
func TestSameSeedSameBytes(t *testing.T) {
	// wrap32 shrunk (wrap32Small) so that its trace stays small.
	for _, c := range []struct {
		name string
		sets []string
	}{{"imposter", nil}, {"wrap32", wrap32Small()}} {
		name := c.name
		j1, t1 := sharedRunBytes(t, name, c.sets...) // maybe TestShortcutsChangeNothing's
		j2, t2 := runBytes(t, name, c.sets...)
		if !bytes.Equal(j1, j2) {
			t.Errorf("%s: --json differs between two runs", name)
		}
		if !bytes.Equal(t1, t2) {
			t.Errorf("%s: --trace differs between two runs (%d, %d bytes)", name, len(t1), len(t2))
		}
		j3, t3 := runBytes(t, name, append(c.sets, "seed=99")...)
		if bytes.Equal(j1, j3) || bytes.Equal(t1, t3) {
			t.Errorf("%s: seed 99 produced the same output as the built-in seed", name)
		}
	}
}
