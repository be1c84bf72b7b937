package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tinyScenario is a run of a few steps, written to dir.
func tinyScenario(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "tiny.yaml")
	doc := "name: tiny\nmodel: {preset: tiny-hybrid}\nengine: {num_gpu_blocks_override: 512, max_model_len: 256}\n" +
		"workload: {kind: poisson, rate: 100, count: 8, prompt_len: {dist: constant, value: 16}, output_len: {dist: constant, value: 4}}\n"
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// unwritable are output paths no one can write: a full device, a path
// under a regular file (fails for root too), and a directory without
// write permission (skipped as root, who writes there anyway).
func unwritable(t *testing.T, dir string) []string {
	t.Helper()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	paths := []string{filepath.Join(file, "sub")}
	if st, err := os.Stat("/dev/full"); err == nil && st.Mode()&os.ModeDevice != 0 {
		paths = append(paths, "/dev/full")
	}
	ro := filepath.Join(dir, "ro")
	if err := os.Mkdir(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	if f, err := os.Create(filepath.Join(ro, "probe")); err == nil {
		f.Close() // root: the directory is writable after all
		t.Log("running as root: no read-only directory case")
	} else {
		paths = append(paths, filepath.Join(ro, "out"))
	}
	return paths
}

// Every output flag driven into an unwritable path is exit 2 naming the
// path, as the README's exit-status table says, never 3.
func TestOutputFailuresExit2(t *testing.T) {
	dir := t.TempDir()
	sc := tinyScenario(t, dir)
	shard := filepath.Join(dir, "shard")
	if code, _, errs := runCLI("sweep", sc, "--vary", "engine.max_num_seqs=4,8", "--out", shard, "--quiet", "--workers", "1"); code != exitClean {
		t.Fatalf("sweep into %s: exit %d, %s", shard, code, errs)
	}
	for _, p := range unwritable(t, dir) {
		for _, args := range [][]string{
			{"run", sc, "--trace", p},
			{"run", sc, "--timeline", p},
			{"plot", sc, "--out", p},
			{"sweep", sc, "--vary", "engine.max_num_seqs=4,8", "--out", p, "--quiet", "--workers", "1"},
			{"sweep", "merge", "--out", p, shard},
			{"check", "--version", "v0.13", "--out", p},
			{"schema", "--out", p},
		} {
			code, _, errs := runCLI(args...)
			if code != exitBadInput || !strings.Contains(errs, "--out "+p) && !strings.Contains(errs, "--trace "+p) && !strings.Contains(errs, "--timeline "+p) {
				t.Errorf("%s: exit %d, want 2 naming %s; stderr:\n%s", strings.Join(args, " "), code, p, errs)
			}
		}
	}
}

// A sweep directory that holds another grid, or a corrupt sweep.json, is
// the --out directory's fault: exit 2.
func TestSweepDirConflictsExit2(t *testing.T) {
	dir := t.TempDir()
	sc := tinyScenario(t, dir)
	out := filepath.Join(dir, "out")
	sweep := func(vals string) (int, string) {
		code, _, errs := runCLI("sweep", sc, "--vary", "engine.max_num_seqs="+vals, "--out", out, "--quiet", "--workers", "1")
		return code, errs
	}
	if code, errs := sweep("4,8"); code != exitClean {
		t.Fatalf("first sweep: exit %d, %s", code, errs)
	}
	if code, errs := sweep("4,16"); code != exitBadInput || !strings.Contains(errs, "different sweep") {
		t.Errorf("another grid in the directory: exit %d, %s", code, errs)
	}
	if err := os.WriteFile(filepath.Join(out, "sweep.json"), []byte("{corrupt"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, errs := sweep("4,8"); code != exitBadInput || !strings.Contains(errs, "corrupt") {
		t.Errorf("corrupt sweep.json: exit %d, %s", code, errs)
	}
}

// failingWriter is stdout on a full device.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// A report that cannot be written to stdout is exit 2, for every command
// that prints one.
func TestStdoutFailureExit2(t *testing.T) {
	dir := t.TempDir()
	sc := tinyScenario(t, dir)
	for _, args := range [][]string{
		{"run", sc},
		{"run", sc, "--json"},
		{"model", sc},
		{"model", sc, "--json"},
		{"explain", sc, "--request", "0"},
		{"sweep", sc, "--vary", "engine.max_num_seqs=4,8", "--out", filepath.Join(dir, "sw"), "--quiet", "--workers", "1"},
		{"scenarios"},
	} {
		var errb strings.Builder
		code := realMain(args, failingWriter{}, &errb)
		if code != exitBadInput || !strings.Contains(errb.String(), "stdout: cannot write") {
			t.Errorf("%s with stdout full: exit %d, stderr %q", strings.Join(args, " "), code, errb.String())
		}
	}
}

// An output path that is an input of the run, or that two outputs share,
// is refused before anything is written.
func TestOutputPathClashes(t *testing.T) {
	dir := t.TempDir()
	sc := tinyScenario(t, dir)
	before, _ := os.ReadFile(sc)
	out := filepath.Join(dir, "x.out")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", sc, "--trace", sc}, "is an input of this run"},
		{[]string{"run", sc, "--timeline", filepath.Join(dir, ".", "tiny.yaml")}, "is an input of this run"},
		{[]string{"run", sc, "--trace", out, "--timeline", out}, "both name"},
	} {
		code, _, errs := runCLI(c.args...)
		if code != exitBadInput || !strings.Contains(errs, c.want) {
			t.Errorf("%s: exit %d, %q", strings.Join(c.args, " "), code, errs)
		}
	}
	if after, _ := os.ReadFile(sc); string(after) != string(before) {
		t.Fatal("the scenario file was overwritten")
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatal("an output was written before the clash was refused")
	}
}
