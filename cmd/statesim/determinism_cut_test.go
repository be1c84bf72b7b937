package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// Determinism where order can leak: runs cut short by checks.max_steps
// with requests still waiting and running, so every output must walk
// live requests (in-flight spans, unfinished latencies, a numeric
// backend's flushed comparisons), not only finished ones. Each output is
// produced three times in one process — Go randomises map order on every
// range, so an output built from map iteration differs between the runs
// — and must be byte-identical: --json, --trace, --timeline, the plots'
// SVG (and PNG) files and a sweep's every file.

// cuts are built-in scenarios cut mid-run: bug A's (symbolic) and the
// numeric backend's, whose in-flight requests are compared when the run
// ends.
var cuts = []struct {
	name  string
	steps int
}{{"imposter", 300}, {"imposter-mock", 120}}

const repeats = 3

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:8])
}

// dirDigests hashes every file under dir that keep accepts, by relative
// path.
func dirDigests(t *testing.T, dir string, keep func(string) bool) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !keep(path) {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		out[rel] = digest(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameDigests(t *testing.T, what string, a, b map[string]string) {
	t.Helper()
	if len(a) == 0 {
		t.Fatalf("%s: no files", what)
	}
	names := make([]string, 0, len(a))
	for n := range a {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if a[n] != b[n] {
			t.Errorf("%s: %s differs between two identical runs (%s, %s)", what, n, a[n], b[n])
		}
	}
	if len(a) != len(b) {
		t.Errorf("%s: %d files, then %d", what, len(a), len(b))
	}
}

// TestCutShortRunIsDeterministic: run --json --trace --timeline.
func TestCutShortRunIsDeterministic(t *testing.T) {
	for _, c := range cuts {
		t.Run(c.name, func(t *testing.T) {
			var first map[string]string
			for i := 0; i < repeats; i++ {
				dir := t.TempDir()
				tr, tl := filepath.Join(dir, "trace.jsonl"), filepath.Join(dir, "timeline.json")
				code, out, errs := runCLI("run", c.name, "--json", "--trace", tr, "--timeline", tl, "--set", "checks.max_steps="+strconv.Itoa(c.steps))
				if code != exitViolations {
					t.Fatalf("exit %d (a cut run breaks liveness): %s", code, errs)
				}
				if i == 0 {
					liveAtTheCut(t, out)
				}
				got := dirDigests(t, dir, func(string) bool { return true })
				got["stdout"] = digest([]byte(out))
				if first == nil {
					first = got
					continue
				}
				sameDigests(t, c.name, first, got)
			}
		})
	}
}

// liveAtTheCut requires the --json report of a run that stopped at
// checks.max_steps with requests unfinished.
func liveAtTheCut(t *testing.T, out string) {
	t.Helper()
	var rep struct {
		Requests   int64 `json:"requests"`
		Finished   int64 `json:"finished"`
		Violations []struct {
			Invariant string `json:"invariant"`
			Detail    string `json:"detail"`
		} `json:"violations"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	cut := false
	for _, v := range rep.Violations {
		cut = cut || v.Invariant == "liveness" && strings.Contains(v.Detail, "checks.max_steps")
	}
	if !cut || rep.Finished >= rep.Requests || rep.Finished == 0 {
		t.Fatalf("not a run cut with live requests: %d of %d finished, cut by max_steps: %v", rep.Finished, rep.Requests, cut)
	}
}

// TestCutShortPlotsAreDeterministic: plot --out, every chart file.
func TestCutShortPlotsAreDeterministic(t *testing.T) {
	c := cuts[0]
	var first map[string]string
	for i := 0; i < repeats; i++ {
		dir := t.TempDir()
		code, _, errs := runCLI("plot", c.name, "--out", dir, "--set", "checks.max_steps="+strconv.Itoa(c.steps))
		if code != exitClean {
			t.Fatalf("exit %d: %s", code, errs)
		}
		got := dirDigests(t, dir, func(p string) bool { return strings.HasSuffix(p, ".svg") || strings.HasSuffix(p, ".png") })
		svg := 0
		for n := range got {
			if strings.HasSuffix(n, ".svg") {
				svg++
			}
		}
		if svg == 0 {
			t.Fatalf("no SVG written: %v", got)
		}
		if first == nil {
			first = got
			continue
		}
		sameDigests(t, "plot "+c.name, first, got)
	}
}

// TestCutShortSweepIsDeterministic: a sweep of cut runs over two values
// and two seeds, cells in parallel: every file (cells, table, CSV, JSON,
// charts) and the printed table, but for the output paths it names.
func TestCutShortSweepIsDeterministic(t *testing.T) {
	c := cuts[0]
	var first map[string]string
	for i := 0; i < repeats; i++ {
		dir := t.TempDir()
		code, out, errs := runCLI("sweep", c.name, "--vary", "engine.gpu_memory_utilization=0.2,0.3", "--seeds", "2", "--workers", "2",
			"--set", "checks.max_steps="+strconv.Itoa(c.steps), "--out", dir, "--quiet")
		if code != exitClean {
			t.Fatalf("exit %d: %s", code, errs)
		}
		got := dirDigests(t, dir, func(string) bool { return true })
		if _, ok := got[filepath.Join("cells", "000003.json")]; !ok {
			t.Fatalf("want 4 cells: %v", got)
		}
		got["stdout"] = digest([]byte(strings.ReplaceAll(out, dir, "DIR")))
		if first == nil {
			first = got
			continue
		}
		sameDigests(t, "sweep "+c.name, first, got)
	}
}
