package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"statesim/scenarios"
)

// The output hashes of every built-in scenario: a refactor must keep every
// byte of `run`, `run --json` and `run --trace`; a change that alters an
// output on purpose regenerates the file with -update-hashes and says why
// in its commit.
var updateHashes = flag.Bool("update-hashes", false, "rewrite testdata/output-hashes.txt")

const hashFile = "testdata/output-hashes.txt"

// hashCase is one command whose outputs are hashed.
type hashCase struct {
	name string   // key in the hash file
	args []string // after "run"
	// trace: also hash the --trace file.
	trace bool
}

func hashCases() []hashCase {
	var cs []hashCase
	for _, n := range scenarios.Builtins() {
		switch n {
		case "synthetic-1m":
			// The full million (about 8 s a run) is checked on request:
			// STATESIM_HASH_1M=1; the suite keeps a 100,000-request cut.
			if os.Getenv("STATESIM_HASH_1M") != "" {
				cs = append(cs, hashCase{name: n, args: []string{n}})
			}
			cs = append(cs, hashCase{name: n + "@100k", args: []string{n, "--set", "workload.count=100000"}})
		default:
			cs = append(cs, hashCase{name: n, args: []string{n}, trace: true})
		}
	}
	return cs
}

func sum(b []byte) string { h := sha256.Sum256(b); return hex.EncodeToString(h[:8]) }

// fileSum hashes a file as sum does, streaming it (a --trace file can be
// a gigabyte).
func fileSum(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := bufio.NewReader(f).WriteTo(h); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)[:8]), nil
}

// hashResult is one case's output hashes, or why it could not run.
type hashResult struct {
	got map[string]string
	err string
}

// hashRun runs one case: text, then --json (and --trace to tr).
func hashRun(c hashCase, tr string) hashResult {
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
	work := make(chan int)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				results[i] = hashRun(cases[i], filepath.Join(dir, fmt.Sprintf("trace-%d.jsonl", i)))
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
		body := "# sha256 (first 8 bytes) of statesim run outputs; see golden_test.go\n" + strings.Join(lines, "\n") + "\n"
		if err := os.WriteFile(hashes, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
