package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"statesim/prop"
)

func readSummary(t *testing.T, dir string) prop.Summary {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, prop.SummaryName))
	if err != nil {
		t.Fatal(err)
	}
	var s prop.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCheckMerge: three shards of a v0.13 campaign each write a summary;
// the merge adds their scenarios up and lists every counterexample (exit
// 1), and refuses a missing shard, a shard given twice, a shard searched
// with other flags and a corrupt summary (exit 2).
func TestCheckMerge(t *testing.T) {
	out := t.TempDir()
	base := []string{"check", "--version", "v0.13", "--property", "stale-slot-read,no-decode-before-prefill", "--trials", "100", "--seed", "5"}
	for i := range 3 {
		code, o, e := runCLI(append(base, "--shard", fmt.Sprintf("%d/3", i), "--out", out)...)
		if want := fmt.Sprintf("shard %d/3: verdict in %s; join the shards with 'statesim check merge %s'", i, filepath.Join(out, fmt.Sprintf("seed-%d", 5+i), prop.SummaryName), out); code != exitViolations || !strings.Contains(o, want) {
			t.Fatalf("shard %d: exit %d, want %d and %q\n%s%s", i, code, exitViolations, want, o, e)
		}
	}
	total := map[string]int{}
	for i := range 3 {
		dir := filepath.Join(out, fmt.Sprintf("seed-%d", 5+i))
		s := readSummary(t, dir)
		if s.Seed != int64(5+i) || s.Shard != i || s.Campaign.Shards != 3 || s.Campaign.BaseSeed != 5 || s.Verdict != "found" {
			t.Fatalf("%s: seed %d shard %d/%d base %d verdict %s", dir, s.Seed, s.Shard, s.Campaign.Shards, s.Campaign.BaseSeed, s.Verdict)
		}
		for _, v := range s.Properties {
			total[v.Property] += v.Scenarios
			y, err := os.ReadFile(filepath.Join(dir, v.Counterexample))
			if v.Status != "FAIL" || err != nil {
				t.Fatalf("%s %s: %s, %v", dir, v.Property, v.Status, err)
			}
			if want := fmt.Sprintf("(search seed %d: shard %d/3)\n", 5+i, i); !strings.Contains(string(y), want) {
				t.Errorf("%s's Found by line lacks %q", v.Counterexample, want)
			}
		}
	}
	code, o, e := runCLI("check", "merge", out)
	if code != exitViolations {
		t.Fatalf("merge: exit %d\n%s%s", code, o, e)
	}
	for _, want := range []string{
		"3 shards, seeds 5..7",
		fmt.Sprintf("stale-slot-read            FAIL in 3 of 3 shards (%d scenarios)", total["stale-slot-read"]),
		fmt.Sprintf("no-decode-before-prefill   FAIL in 3 of 3 shards (%d scenarios)", total["no-decode-before-prefill"]),
		filepath.Join(out, "seed-7", "stale-slot-read.yaml"),
		"2 of 2 properties FAIL",
	} {
		if !strings.Contains(o, want) {
			t.Errorf("merge output lacks %q:\n%s", want, o)
		}
	}
	// The shards' own directories merge the same.
	dirs := []string{"check", "merge"}
	for i := range 3 {
		dirs = append(dirs, filepath.Join(out, fmt.Sprintf("seed-%d", 5+i)))
	}
	if code, o2, e := runCLI(dirs...); code != exitViolations || o2 != o {
		t.Errorf("merge of the seed directories: exit %d, output differs:\n%s%s", code, o2, e)
	}

	other := t.TempDir()
	if code, o, e := runCLI(append(base, "--version", "v0.22", "--shard", "2/3", "--out", other)...); code == exitBadInput {
		t.Fatalf("v0.22 shard: exit %d\n%s%s", code, o, e)
	}
	for _, c := range []struct {
		dirs []string
		want string
	}{
		{[]string{dirs[2], dirs[4]}, "1 of 3 shards have no check.json in the directories given (missing, or their search has not finished): seed 6 (shard 1/3)"},
		{[]string{out, dirs[3]}, "seed 6 (shard 1/3) is in both"},
		{[]string{dirs[2], dirs[3], filepath.Join(other, "seed-7")}, `are shards of different searches (config.Versions: ["v0.13"] vs ["v0.22"])`},
		{[]string{t.TempDir()}, "no check.json in it or in a seed-S directory under it"},
	} {
		code, o, e := runCLI(append([]string{"check", "merge"}, c.dirs...)...)
		if code != exitBadInput || !strings.Contains(e, c.want) {
			t.Errorf("merge %v: exit %d, want %d and %q\n%s%s", c.dirs, code, exitBadInput, c.want, o, e)
		}
	}
	// Another budget is another search, too.
	if code, o, e := runCLI(append(base, "--trials", "50", "--shard", "2/3", "--out", other)...); code == exitBadInput {
		t.Fatalf("--trials 50 shard: exit %d\n%s%s", code, o, e)
	}
	if code, _, e := runCLI("check", "merge", dirs[2], dirs[3], filepath.Join(other, "seed-7")); code != exitBadInput || !strings.Contains(e, "(trials: 100 vs 50)") {
		t.Errorf("merge with --trials 50: exit %d\n%s", code, e)
	}
	if err := os.WriteFile(filepath.Join(dirs[3], prop.SummaryName), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, e := runCLI("check", "merge", out); code != exitBadInput || !strings.Contains(e, filepath.Join(dirs[3], prop.SummaryName)+": not a check summary") {
		t.Errorf("corrupt summary: exit %d\n%s", code, e)
	}
}

// TestCheckMergeClean: an unsharded run writes its summary into --out; a
// clean campaign sharded by the environment merges to exit 0 with the
// scenarios of every shard counted.
func TestCheckMergeClean(t *testing.T) {
	dir := t.TempDir()
	if code, o, e := runCLI("check", "--trials", "6", "--property", "stale-slot-read", "--out", dir); code != exitClean {
		t.Fatalf("exit %d\n%s%s", code, o, e)
	}
	if s := readSummary(t, dir); s.Shard != 0 || s.Campaign.Shards != 1 || s.Seed != 1 || s.Verdict != "clean" ||
		len(s.Properties) != 1 || s.Properties[0].Status != "ok" || s.Properties[0].Scenarios != 6 {
		t.Fatalf("unsharded summary: %+v", s)
	}
	out := t.TempDir()
	for i := range 2 {
		t.Setenv("JOB_COMPLETION_INDEX", fmt.Sprint(i))
		t.Setenv("JOB_COMPLETIONS", "2")
		if code, o, e := runCLI("check", "--trials", "6", "--property", "stale-slot-read,conservation", "--out", out); code != exitClean {
			t.Fatalf("shard %d: exit %d\n%s%s", i, code, o, e)
		}
	}
	// The same shard by flag writes the same bytes: the summary holds
	// nothing of the machine, the clock or how the shard was chosen.
	os.Unsetenv("JOB_COMPLETION_INDEX")
	os.Unsetenv("JOB_COMPLETIONS")
	again := t.TempDir()
	if code, o, e := runCLI("check", "--trials", "6", "--property", "stale-slot-read,conservation", "--shard", "1/2", "--out", again); code != exitClean {
		t.Fatalf("--shard 1/2: exit %d\n%s%s", code, o, e)
	}
	a, _ := os.ReadFile(filepath.Join(out, "seed-2", prop.SummaryName))
	b, _ := os.ReadFile(filepath.Join(again, "seed-2", prop.SummaryName))
	if len(a) == 0 || string(a) != string(b) {
		t.Errorf("shard 1/2's summary differs between the environment and --shard:\n%s\n%s", a, b)
	}
	code, o, e := runCLI("check", "merge", out)
	if code != exitClean || !strings.Contains(o, "stale-slot-read            ok (12 scenarios)") || !strings.Contains(o, "conservation               ok (12 scenarios)") || strings.Contains(o, "FAIL") {
		t.Fatalf("merge: exit %d\n%s%s", code, o, e)
	}
}

// A run that stops before judging every property (here: its
// counterexample cannot be written) leaves no summary, not an earlier
// run's: the merge then counts the shard as missing.
func TestCheckUnfinishedLeavesNoSummary(t *testing.T) {
	dir := t.TempDir()
	if code, o, e := runCLI("check", "--trials", "3", "--property", "stale-slot-read", "--out", dir); code != exitClean {
		t.Fatalf("exit %d\n%s%s", code, o, e)
	}
	if err := os.Mkdir(filepath.Join(dir, "stale-slot-read.jsonl"), 0o755); err != nil {
		t.Fatal(err)
	}
	if code, o, e := runCLI("check", "--version", "v0.13", "--trials", "100", "--property", "stale-slot-read", "--out", dir); code != exitBadInput {
		t.Fatalf("unwritable counterexample: exit %d\n%s%s", code, o, e)
	}
	if _, err := os.Stat(filepath.Join(dir, prop.SummaryName)); !os.IsNotExist(err) {
		t.Errorf("the earlier run's summary is still there: %v", err)
	}
}
