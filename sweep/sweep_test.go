package sweep

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	_ "statesim/backend/mock" // backend kind "mock"
)

// small is a 16-cell sweep of a cut-down imposter workload that runs in
// well under a second.
func small() *Spec {
	return &Spec{
		Name:     "small",
		Scenario: "imposter",
		Sets:     []string{"workload.num_prompts=256", "workload.output_len.median=30", "workload.output_len.max=200"},
		Axes: []Axis{
			{Key: "engine.vllm_version", Values: []string{"v0.13", "fixed"}},
			{Key: "engine.gpu_memory_utilization", Values: []string{"0.15", "0.2", "0.5", "0.9"}},
		},
		Seeds:  2,
		Metric: "imposters",
	}
}

// outputs renders everything a sweep writes except the chart.
func outputs(t *testing.T, s *Spec, rs []*Result) string {
	t.Helper()
	var b bytes.Buffer
	for _, w := range []func(*bytes.Buffer) error{
		func(b *bytes.Buffer) error { return WriteTable(b, s, rs) },
		func(b *bytes.Buffer) error { return WriteCSV(b, s, rs) },
		func(b *bytes.Buffer) error { return WriteJSON(b, s, rs) },
	} {
		if err := w(&b); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// straightRun is small()'s sweep run once, two workers, no directory:
// the reference that sharded, resumed and written sweeps are compared
// with (and read only).
var straightRun struct {
	once sync.Once
	rs   []*Result
	err  error
}

func straight(t *testing.T) []*Result {
	t.Helper()
	straightRun.once.Do(func() {
		straightRun.rs, straightRun.err = small().Run(context.Background(), Options{Workers: 2})
	})
	if straightRun.err != nil {
		t.Fatal(straightRun.err)
	}
	return straightRun.rs
}

func run(t *testing.T, s *Spec, opt Options) []*Result {
	t.Helper()
	rs, err := s.Run(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func TestGridOrder(t *testing.T) {
	cells, err := small().Plan()
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 16 {
		t.Fatalf("%d cells, want 2×4×2", len(cells))
	}
	// First axis outermost, seed innermost; seeds start at the scenario's.
	want := []string{"v0.13 0.15 3", "v0.13 0.15 4", "v0.13 0.2 3"}
	for i, w := range want {
		c := cells[i]
		if got := strings.Join(c.Values, " ") + " " + strconv.FormatUint(c.Seed, 10); got != w || c.Index != i {
			t.Errorf("cell %d = %q (index %d), want %q", i, got, c.Index, w)
		}
	}
	if last := cells[15]; last.Values[0] != "fixed" || last.Values[1] != "0.9" || last.Seed != 4 {
		t.Errorf("last cell %+v", last)
	}
}

func TestWorkersGiveIdenticalOutput(t *testing.T) {
	s := small()
	one := outputs(t, s, run(t, s, Options{Workers: 1}))
	many := outputs(t, s, run(t, s, Options{Workers: 4, Dir: t.TempDir()}))
	if one != many {
		t.Fatalf("1 worker and 4 workers differ:\n%s\n----\n%s", one, many)
	}
	if !strings.Contains(one, "v0.13") || !strings.Contains(one, "fixed") {
		t.Fatalf("table lacks its keys:\n%s", one)
	}
}

func TestShardsMergeToUnsharded(t *testing.T) {
	s := small()
	want := outputs(t, s, straight(t))
	var dirs []string
	total := 0
	for i := 0; i < 3; i++ {
		d := filepath.Join(t.TempDir(), "shard")
		dirs = append(dirs, d)
		rs := run(t, s, Options{Workers: 2, Dir: d, Shard: Shard{I: i, N: 3}})
		for _, r := range rs {
			if r.Index%3 != i {
				t.Fatalf("shard %d/3 ran cell %d", i, r.Index)
			}
		}
		total += len(rs)
	}
	if total != 16 {
		t.Fatalf("shards ran %d cells, want 16", total)
	}
	// Merging in any directory order gives grid order.
	spec, rs, missing, err := Merge([]string{dirs[2], dirs[0], dirs[1]})
	if err != nil || len(missing) > 0 {
		t.Fatalf("merge: %v, missing %v", err, missing)
	}
	if got := outputs(t, spec, rs); got != want {
		t.Fatalf("merged shards differ from the unsharded run:\n%s\n----\n%s", got, want)
	}
	// A missing shard is reported, not papered over.
	_, _, missing, err = Merge(dirs[:2])
	if err != nil || len(missing) == 0 {
		t.Fatalf("merge of 2 of 3 shards: err %v, missing %v", err, missing)
	}
}

func TestResumeSkipsFinishedCells(t *testing.T) {
	s := small()
	dir := t.TempDir()
	first := run(t, s, Options{Workers: 2, Dir: dir})
	// Lose one cell and corrupt another: both must be run again.
	os.Remove(cellPath(dir, first[5].Cell))
	if err := os.WriteFile(cellPath(dir, first[9].Cell), []byte("{truncated"), 0o644); err != nil {
		t.Fatal(err)
	}
	var resumed, ran []int
	second := run(t, s, Options{Workers: 2, Dir: dir, Progress: func(_, _ int, r *Result, res bool) {
		if res {
			resumed = append(resumed, r.Index)
		} else {
			ran = append(ran, r.Index)
		}
	}})
	if len(resumed) != 14 || len(ran) != 2 {
		t.Fatalf("resumed %v, ran %v; want 14 resumed and cells 5 and 9 run", resumed, ran)
	}
	if outputs(t, s, first) != outputs(t, s, second) {
		t.Fatal("resumed sweep differs from the first run")
	}
	// The same directory refuses a different sweep.
	other := small()
	other.Seeds = 3
	if _, err := other.Run(context.Background(), Options{Dir: dir}); err == nil || !strings.Contains(err.Error(), "different sweep") {
		t.Fatalf("other sweep in the same dir: %v", err)
	}
}

func TestInterruptThenResume(t *testing.T) {
	s := small()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	rs, err := s.Run(ctx, Options{Workers: 1, Dir: dir, Progress: func(done, _ int, _ *Result, _ bool) {
		if done == 3 {
			cancel()
		}
	}})
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("err %v, want ErrInterrupted", err)
	}
	if len(rs) < 3 || len(rs) >= 16 {
		t.Fatalf("%d cells finished before the interrupt took effect", len(rs))
	}
	n := 0
	all := run(t, s, Options{Workers: 2, Dir: dir, Progress: func(_, _ int, _ *Result, res bool) {
		if res {
			n++
		}
	}})
	if n != len(rs) || len(all) != 16 {
		t.Fatalf("resumed %d (want %d), total %d", n, len(rs), len(all))
	}
	if outputs(t, s, all) != outputs(t, s, straight(t)) {
		t.Fatal("interrupted and resumed sweep differs from a straight run")
	}
}

func TestWriteOutputs(t *testing.T) {
	s := small()
	dir := t.TempDir()
	files, err := WriteOutputs(dir, s, straight(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"table.txt", "results.csv", "results.json", "small-incidence.png", "small-incidence.svg"} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	if len(files) != 5 {
		t.Errorf("files %v", files)
	}
}

func TestBadInput(t *testing.T) {
	for _, v := range []string{"", "=1,2", "engine.block_size", "k=1,,2", "k=1,1"} {
		if _, err := ParseVary(v); err == nil {
			t.Errorf("ParseVary(%q): no error", v)
		}
	}
	for _, v := range []string{"", "1", "3/3", "-1/2", "a/b", "1/0", "0/2x"} {
		if _, err := ParseShard(v); err == nil {
			t.Errorf("ParseShard(%q): no error", v)
		}
	}
	if sh, err := ParseShard("2/5"); err != nil || sh != (Shard{2, 5}) {
		t.Errorf("ParseShard(2/5) = %v, %v", sh, err)
	}
	bad := small()
	bad.Axes[1].Values = []string{"0.2", "7"}
	if _, err := bad.Plan(); err == nil || !strings.Contains(err.Error(), "gpu_memory_utilization") {
		t.Errorf("utilization 7: %v", err)
	}
	bad = small()
	bad.Axes[0].Key = "engine.no_such_knob"
	if _, err := bad.Plan(); err == nil {
		t.Error("unknown key: no error")
	}
	bad = small()
	bad.Metric = "nope"
	if _, err := bad.Plan(); err == nil {
		t.Error("unknown metric: no error")
	}
}

// With the numeric backend, the divergent column is its count (the mock's
// log-prob comparison); with the symbolic one it stays blank (-1).
func TestDivergentColumn(t *testing.T) {
	// Bug B on the mock over 48 requests (29 corrupted and divergent at 16
	// bits): the column's source, not the bug's incidence, is under test.
	s := &Spec{Name: "mock", Scenario: "wrap16-mock", Sets: []string{"workload.num_prompts=48"},
		Axes: []Axis{{Key: "engine.state_index_bits", Values: []string{"16", "64"}}}, Seeds: 1, Metric: "divergent"}
	rs := run(t, s, Options{Workers: 2})
	if rs[0].Divergent <= 0 || rs[0].Corrupted <= 0 || rs[1].Divergent != 0 {
		t.Fatalf("16-bit: %d divergent, %d corrupted; 64-bit: %d divergent", rs[0].Divergent, rs[0].Corrupted, rs[1].Divergent)
	}
	sym := straight(t)
	if sym[0].Divergent != -1 {
		t.Fatalf("symbolic backend: divergent %d, want -1 (blank)", sym[0].Divergent)
	}
	var b bytes.Buffer
	if err := WriteCSV(&b, s, rs); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "divergent_per_1000") {
		t.Fatal("CSV lacks divergent_per_1000")
	}
}

// A point the memory model cannot fit is recorded as an error, not the
// end of the sweep.
func TestInfeasibleCellIsRecorded(t *testing.T) {
	s := small()
	s.Axes = []Axis{{Key: "engine.gpu_memory_utilization", Values: []string{"0.05", "0.2"}}}
	s.Seeds = 1
	rs := run(t, s, Options{Workers: 2})
	if len(rs) != 2 || !strings.Contains(rs[0].Error, "no memory left for the cache") || rs[1].Error != "" || rs[1].Requests == 0 {
		t.Fatalf("results: %+v / %+v", rs[0], rs[1])
	}
	pts := Points(s, rs)
	if !math.IsNaN(pts[0].Value) || math.IsNaN(pts[1].Value) {
		t.Fatalf("metric per point: %v, %v", pts[0].Value, pts[1].Value)
	}
	var b bytes.Buffer
	if err := WriteTable(&b, s, rs); err != nil || !strings.Contains(b.String(), "error in engine.gpu_memory_utilization=0.05") {
		t.Fatalf("table: %v\n%s", err, b.String())
	}
}

// Merge refuses directories of two different sweeps, whichever comes
// first, and names both.
func TestMergeRefusesDifferentSweeps(t *testing.T) {
	a, b := small(), small()
	a.Axes = a.Axes[:1]
	b.Axes = b.Axes[:1]
	b.Sets = append(b.Sets[:len(b.Sets):len(b.Sets)], "engine.max_num_seqs=64")
	da, db := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	run(t, a, Options{Dir: da, Shard: Shard{I: 0, N: 2}})
	run(t, b, Options{Dir: db, Shard: Shard{I: 1, N: 2}})
	for _, dirs := range [][]string{{da, db}, {db, da}} {
		_, _, _, err := Merge(dirs)
		if err == nil || !strings.Contains(err.Error(), "different sweep") || !strings.Contains(err.Error(), dirs[1]) || !strings.Contains(err.Error(), dirs[0]) {
			t.Errorf("merge %v: %v", dirs, err)
		}
	}
}

// A cell file that holds another cell (copied by hand, or a shard's file
// moved) is never taken for this cell: resume recomputes it, merge names it.
func TestForeignCellFile(t *testing.T) {
	s := small()
	dir := t.TempDir()
	first := run(t, s, Options{Workers: 2, Dir: dir})
	foreign, err := os.ReadFile(cellPath(dir, first[3].Cell))
	if err != nil {
		t.Fatal(err)
	}
	victim := cellPath(dir, first[7].Cell)
	if err := os.WriteFile(victim, foreign, 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, _, err = Merge([]string{dir})
	if err == nil || !strings.Contains(err.Error(), victim) || !strings.Contains(err.Error(), "holds cell 3") {
		t.Fatalf("merge over a foreign cell file: %v", err)
	}
	var ran []int
	second := run(t, s, Options{Workers: 2, Dir: dir, Progress: func(_, _ int, r *Result, resumed bool) {
		if !resumed {
			ran = append(ran, r.Index)
		}
	}})
	if len(ran) != 1 || ran[0] != 7 {
		t.Fatalf("resume ran %v, want cell 7 alone", ran)
	}
	if outputs(t, s, first) != outputs(t, s, second) {
		t.Fatal("resumed sweep differs from the first run")
	}
	if _, _, missing, err := Merge([]string{dir}); err != nil || len(missing) != 0 {
		t.Fatalf("after resume, merge: %v, missing %v", err, missing)
	}
}
