package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Flags that cannot apply, or would be taken as something else, are
// refused: sweep --seeds 0 (a sweep file's seeds: 0 always was),
// check --spec-k without --spec, --hash-block 0 (blamed on
// --prefix-caching before).
func TestFlagsThatCannotApply(t *testing.T) {
	dir := t.TempDir()
	sc := tinyScenario(t, dir)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sweep", sc, "--vary", "engine.max_num_seqs=4,8", "--seeds", "0", "--out", filepath.Join(dir, "s0")}, "--seeds must be >= 1"},
		{[]string{"sweep", sc, "--vary", "engine.max_num_seqs=4,8", "--seeds", "1000000000", "--out", filepath.Join(dir, "s1")}, "may hold"},
		{[]string{"sweep", sc, "--vary", "engine.max_num_seqs=4,4.0", "--out", filepath.Join(dir, "s2")}, "same value"},
		{[]string{"check", "--spec-k", "3", "--trials", "1"}, "--spec-k applies only with --spec"},
		{[]string{"check", "--prefix-caching", "on", "--hash-block", "0", "--trials", "1"}, "--hash-block: want at least 1"},
		{[]string{"check", "--spec", "dflash", "--trials", "1"}, "--spec dflash needs --draft"},
		{[]string{"check", "--spec", "dflash", "--draft", "1:11:192", "--trials", "1"}, "--draft: want LAYERS:KV_HEADS:HEAD_DIM:WINDOW"},
		{[]string{"check", "--spec", "mtp", "--draft", "1:11:192:2048", "--trials", "1"}, "--draft applies only with --spec dflash"},
	} {
		code, _, errs := runCLI(c.args...)
		if code != exitBadInput || !strings.Contains(errs, c.want) {
			t.Errorf("%s: exit %d, %q", strings.Join(c.args, " "), code, errs)
		}
	}
}

// A sweep file with a key given twice (or an alias) is a sweep with an
// error, not "a scenario, not a sweep".
func TestSweepFileErrorsNamed(t *testing.T) {
	dir := t.TempDir()
	tinyScenario(t, dir)
	p := filepath.Join(dir, "sw.yaml")
	doc := "scenario: tiny.yaml\nvary:\n  - {key: engine.max_num_seqs, values: [4, 8]}\nvary:\n  - {key: engine.max_num_seqs, values: [2]}\n"
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runCLI("sweep", p, "--out", filepath.Join(dir, "o"))
	if code != exitBadInput || !strings.Contains(errs, "sw.yaml:4: field vary: duplicate key") {
		t.Errorf("vary twice: exit %d, %q", code, errs)
	}
}

// /dev/zero as a scenario, sweep or config is refused at its bound by
// every command that reads one (they grew to 2 GB).
func TestDevZeroInputs(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	for _, args := range [][]string{
		{"run", "/dev/zero"},
		{"explain", "/dev/zero", "--request", "0"},
		{"model", "/dev/zero"},
		{"sweep", "/dev/zero", "--vary", "engine.max_num_seqs=4,8"},
		{"sweep", "/dev/zero"},
		{"plot", "/dev/zero"},
	} {
		code, _, errs := runCLI(args...)
		if code != exitBadInput || !strings.Contains(errs, "/dev/zero: larger than 1 MiB, the most a scenario file may hold") {
			t.Errorf("%s: exit %d, %q", strings.Join(args, " "), code, errs)
		}
	}
}

// Every regression's --trace reads back whole: the closing record, and the
// order a run writes steps in (under async scheduling a step that
// schedules nothing is written ahead of the step in flight).
func TestRegressionTracesPlot(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "scenarios", "regressions", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no regressions: %v", err)
	}
	dir := t.TempDir()
	for _, f := range files {
		tr := filepath.Join(dir, "t.jsonl")
		if code, _, errs := runCLI("run", f, "--trace", tr); code != exitClean && code != exitViolations {
			t.Fatalf("run %s: exit %d, %s", f, code, errs)
		}
		if _, err := plotTrace(tr, []string{f}, nil); err != nil { // plot --trace's reading, not its drawing
			t.Errorf("plot --trace of %s: %v", filepath.Base(f), err)
		}
	}
}
