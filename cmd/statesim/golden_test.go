package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"statesim/engine"
	"statesim/internal/testtier"
	"statesim/scenarios"
)

// The output hashes of every built-in scenario: a refactor must keep every
// byte of `run`, `run --json` and `run --trace`; a change that alters an
// output on purpose regenerates the file with -update-hashes and says why
// in its commit.
//
// The suite renders a case's text and --json from one engine run whose
// trace streams into the hash (cmdRun is Load, engine.Run, then one of the
// two writers: TestRunPrintsTheReport pins that, tracing included). The
// long tier ($STATESIM_LONG, `make long`) hashes through the command
// itself, twice a case like a user's two invocations, and adds the cases
// too big for the suite.
var updateHashes = flag.Bool("update-hashes", false, "rewrite testdata/output-hashes.txt (every case but the full million, which wants $STATESIM_HASH_1M)")

const hashFile = "testdata/output-hashes.txt"

// hashCase is one command whose outputs are hashed.
type hashCase struct {
	name string   // key in the hash file
	args []string // after "run"
	// trace: also hash the --trace file.
	trace bool
}

// longTests reports whether the long tier runs, or an update, which must
// write every line.
func longTests() bool { return testtier.Long() || *updateHashes }

func hashCases() []hashCase {
	var cs []hashCase
	for _, n := range scenarios.Builtins() {
		switch n {
		case "synthetic-1m":
			// The full million (about 8 s a run) is checked on request:
			// STATESIM_HASH_1M=1. The long tier keeps a 100,000-request
			// cut, the suite a 10,000-request one.
			if os.Getenv("STATESIM_HASH_1M") != "" {
				cs = append(cs, hashCase{name: n, args: []string{n}})
			}
			if longTests() {
				cs = append(cs, hashCase{name: n + "@100k", args: []string{n, "--set", "workload.count=100000"}})
			}
			cs = append(cs, hashCase{name: n + "@10k", args: []string{n, "--set", "workload.count=10000"}})
		case "azure-conv", "wrap32", "azure-conv-qwen3-next-mtp":
			// Their traces (a gigabyte, a third of one, and 400 MB of
			// spec steps) cost more than the rest of the suite's traces
			// together; the other built-ins pin the trace writer, the
			// long tier these.
			cs = append(cs, hashCase{name: n, args: []string{n}, trace: longTests()})
		default:
			cs = append(cs, hashCase{name: n, args: []string{n}, trace: true})
		}
	}
	// The hybrids with prefix caching on (Mamba cache mode all): no
	// built-in runs them so (their releases default it off), and their
	// shortcuts over the Mamba groups' tables are pinned here.
	for _, n := range []string{"azure-conv", "mooncake-hybrid"} {
		cs = append(cs, hashCase{name: n + "+prefix-caching", args: []string{n, "--set", "engine.enable_prefix_caching=on"}, trace: longTests()})
	}
	return cs
}

func sum(b []byte) string { h := sha256.Sum256(b); return hex.EncodeToString(h[:8]) }

func hashSum(h hash.Hash) string { return hex.EncodeToString(h.Sum(nil)[:8]) }

// traceHash fingerprints a --trace stream as CRC-32 (IEEE) then CRC-32C,
// 64 bits. It pins every byte against accidental change as the first 8
// bytes of a SHA-256 did (no one forges a trace), at about ten times the
// speed: the suite hashes some 700 MB of traces, where SHA-256 was a
// quarter of TestOutputHashes.
type traceHash struct{ ieee, c hash.Hash32 }

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func newTraceHash() hash.Hash {
	return &traceHash{ieee: crc32.NewIEEE(), c: crc32.New(castagnoli)}
}

func (h *traceHash) Write(b []byte) (int, error) {
	h.ieee.Write(b)
	return h.c.Write(b)
}

func (h *traceHash) Sum(b []byte) []byte { return h.c.Sum(h.ieee.Sum(b)) }
func (h *traceHash) Reset()              { h.ieee.Reset(); h.c.Reset() }
func (h *traceHash) Size() int           { return 8 }
func (h *traceHash) BlockSize() int      { return 1 }

// fileSum hashes a --trace file as traceHash does, streaming it (it can
// be a gigabyte).
func fileSum(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := newTraceHash()
	if _, err := bufio.NewReader(f).WriteTo(h); err != nil {
		return "", err
	}
	return hashSum(h), nil
}

// hashResult is one case's output hashes, or why it could not run.
type hashResult struct {
	got map[string]string
	err string
}

// render runs one case the way cmdRun does, once: the report written as
// text and as JSON, and the trace into trace when it is not nil.
func render(c hashCase, trace io.Writer) (text, js []byte, err error) {
	fs := flagsOf(c.args[1:])
	sc, err := scenarios.Load(c.args[0], fs)
	if err != nil {
		return nil, nil, err
	}
	rep, err := engine.Run(sc, engine.Options{Trace: trace})
	if err != nil {
		return nil, nil, err
	}
	var tb, jb bytes.Buffer
	if err := rep.WriteText(&tb); err != nil {
		return nil, nil, err
	}
	if err := rep.WriteJSON(&jb); err != nil {
		return nil, nil, err
	}
	return tb.Bytes(), jb.Bytes(), nil
}

// flagsOf turns a case's "--set k=v" pairs into the loader's overrides.
func flagsOf(args []string) setFlags {
	var s setFlags
	for i := 0; i+1 < len(args); i += 2 {
		if args[i] == "--set" {
			s.Set(args[i+1])
		}
	}
	return s
}

// rendered is one case's rendering: text, JSON, and its trace's hash
// and length (when traced).
type rendered struct {
	text, js []byte
	trace    string
	traceLen int64
	err      error
}

// renders keeps the renderings that TestOutputHashes and
// TestRunPrintsTheReport both make: one engine run a case, whichever
// test asks first.
var renders sync.Map // name and trace → *renderOnce

type renderOnce struct {
	once sync.Once
	r    rendered
}

// renderShared is render with the trace (when c.trace) hashed, once a
// case per process.
func renderShared(c hashCase) *rendered {
	v, _ := renders.LoadOrStore(fmt.Sprint(c.name, c.args, c.trace), &renderOnce{})
	o := v.(*renderOnce)
	o.once.Do(func() {
		tr := &countWriter{w: newTraceHash()}
		var w io.Writer
		if c.trace {
			w = tr
		}
		o.r.text, o.r.js, o.r.err = render(c, w)
		if c.trace {
			o.r.trace, o.r.traceLen = hashSum(tr.w), tr.n
		}
	})
	return &o.r
}

// hashRender hashes one case from a single engine run.
func hashRender(c hashCase) hashResult {
	r := renderShared(c)
	if r.err != nil {
		return hashResult{err: r.err.Error()}
	}
	got := map[string]string{c.name + ".text": sum(r.text), c.name + ".json": sum(r.js)}
	if c.trace {
		got[c.name+".trace"] = r.trace
	}
	return hashResult{got: got}
}

// hashCLI runs one case through the command: text, then --json (and
// --trace to tr).
func hashCLI(c hashCase, tr string) hashResult {
	code, text, errs := runCLI(append([]string{"run"}, c.args...)...)
	if code != exitClean && code != exitViolations {
		return hashResult{err: fmt.Sprintf("exit %d: %s", code, errs)}
	}
	args := append([]string{"run"}, c.args...)
	args = append(args, "--json")
	if c.trace {
		args = append(args, "--trace", tr)
	}
	_, js, errs := runCLI(args...)
	if errs != "" {
		return hashResult{err: "--json: " + errs}
	}
	got := map[string]string{c.name + ".text": sum([]byte(text)), c.name + ".json": sum([]byte(js))}
	if c.trace {
		h, err := fileSum(tr)
		if err != nil {
			return hashResult{err: err.Error()}
		}
		got[c.name+".trace"] = h
		os.Remove(tr)
	}
	return hashResult{got: got}
}

func TestOutputHashes(t *testing.T) {
	hashes, err := filepath.Abs(hashFile)
	if err != nil {
		t.Fatal(err)
	}
	// Built-ins and their traces are embedded: no working directory needed.
	want := map[string]string{}
	if b, err := os.ReadFile(hashes); err == nil {
		for _, ln := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if f := strings.Fields(ln); len(f) == 2 && !strings.HasPrefix(ln, "#") {
				want[f[0]] = f[1]
			}
		}
	} else if !*updateHashes {
		t.Fatalf("%v (generate it with go test ./cmd/statesim -run TestOutputHashes -update-hashes)", err)
	}
	// The cases are independent runs: two at a time (the machines this
	// runs on have two cores or more), results compared in case order.
	cases := hashCases()
	results := make([]hashResult, len(cases))
	dir := t.TempDir()
	long := longTests()
	work := make(chan int)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if long {
					results[i] = hashCLI(cases[i], filepath.Join(dir, fmt.Sprintf("trace-%d.jsonl", i)))
				} else {
					results[i] = hashRender(cases[i])
				}
			}
		}()
	}
	for i := range cases {
		work <- i
	}
	close(work)
	wg.Wait()
	var lines []string
	for i, c := range cases {
		res := results[i]
		if res.err != "" {
			t.Fatalf("%s: %s", c.name, res.err)
		}
		for _, k := range []string{".text", ".json", ".trace"} {
			g, ok := res.got[c.name+k]
			if !ok {
				continue
			}
			lines = append(lines, fmt.Sprintf("%s %s", c.name+k, g))
			if w, ok := want[c.name+k]; !*updateHashes && (!ok || w != g) {
				t.Errorf("%s%s: output hash %s, want %q: an output changed (regenerate with -update-hashes only if the change is meant, and say why)", c.name, k, g, w)
			}
		}
	}
	if *updateHashes {
		// The full million runs only on request: an update without it
		// keeps its lines.
		if os.Getenv("STATESIM_HASH_1M") == "" {
			for _, k := range []string{".text", ".json", ".trace"} {
				if w, ok := want["synthetic-1m"+k]; ok {
					lines = append(lines, "synthetic-1m"+k+" "+w)
				}
			}
		}
		body := "# sha256 (first 8 bytes) of statesim run outputs, CRC-32 and CRC-32C of traces; see golden_test.go\n" + strings.Join(lines, "\n") + "\n"
		if err := os.WriteFile(hashes, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRunPrintsTheReport: `run` and `run --json --trace` print exactly
// what one engine run renders (so the suite's hashes of the renderings
// are the command's), and tracing changes no byte of the report: the
// text comes from an untraced command run, the rendering from a traced
// engine run.
func TestRunPrintsTheReport(t *testing.T) {
	for _, c := range []hashCase{
		{name: "imposter", args: []string{"imposter"}, trace: true},
		{name: "nemotron-h-imposter", args: []string{"nemotron-h-imposter"}, trace: true},
	} {
		// The trace is tens of megabytes: both sides are hashed as they
		// stream rather than held. The rendering is TestOutputHashes'.
		r := renderShared(c)
		if r.err != nil {
			t.Fatalf("%s: %v", c.name, r.err)
		}
		text, js := r.text, r.js
		code, out, errs := runCLI(append([]string{"run"}, c.args...)...)
		if code != exitClean && code != exitViolations || out != string(text) {
			t.Errorf("%s: run exits %d (%s) and prints other text than the report's:\n%s\nwant\n%s", c.name, code, errs, out, text)
		}
		p := filepath.Join(t.TempDir(), "trace.jsonl")
		code, out, errs = runCLI(append(append([]string{"run"}, c.args...), "--json", "--trace", p)...)
		if code != exitClean && code != exitViolations || out != string(js) {
			t.Errorf("%s: run --json exits %d (%s) and prints other JSON than the report's", c.name, code, errs)
		}
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := fileSum(p)
		if err != nil {
			t.Fatal(err)
		}
		if got != r.trace || st.Size() != r.traceLen || r.traceLen == 0 {
			t.Errorf("%s: --trace wrote %d bytes (hash %s), the engine's trace is %d bytes (%s)", c.name, st.Size(), got, r.traceLen, r.trace)
		}
	}
}

// countWriter passes writes to a hash and counts the bytes.
type countWriter struct {
	w hash.Hash
	n int64
}

func (c *countWriter) Write(b []byte) (int, error) {
	c.n += int64(len(b))
	return c.w.Write(b)
}
