package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The grid's size is checked before anything is allocated: a sweep of
// exactly MaxCells cells validates, one more cell (by seeds or by values)
// does not, and a billion seeds fail at once rather than allocating.
func TestCellsBound(t *testing.T) {
	grid := func(seeds int, values ...int) *Spec {
		s := &Spec{Name: "b", Scenario: "imposter", Seeds: seeds, Metric: "imposters"}
		for i, n := range values {
			a := Axis{Key: "k" + string(rune('a'+i))}
			for v := 0; v < n; v++ {
				a.Values = append(a.Values, "v"+itoa(v))
			}
			s.Axes = append(s.Axes, a)
		}
		return s
	}
	for _, c := range []struct {
		s  *Spec
		ok bool
	}{
		{grid(MaxCells/4, 2, 2), true},
		{grid(MaxCells/4+1, 2, 2), false},
		{grid(1, MaxCells), true},
		{grid(1, MaxCells+1), false},
		{grid(2, MaxCells/2, 2), false},
		{grid(MaxCells, 1), true},
		{grid(MaxCells+1, 1), false},
		{grid(1_000_000_000, 2), false},
	} {
		err := c.s.Validate()
		if c.ok != (err == nil) {
			t.Errorf("seeds %d, %d axes: %v (want ok=%v)", c.s.Seeds, len(c.s.Axes), err, c.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "may hold") {
			t.Errorf("seeds %d: %v, want the bound named", c.s.Seeds, err)
		}
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// 4, "4" and 4.0 set a field alike: listing them is one grid point given
// twice, refused; a set: key that is also varied is refused.
func TestSameValueAndSetVaried(t *testing.T) {
	for _, vals := range [][]string{{"4", "4.0"}, {"4", "4e0"}, {"0.5", "0.50"}} {
		s := small()
		s.Axes[1].Values = vals
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "same value") {
			t.Errorf("values %q: %v", vals, err)
		}
	}
	s := small()
	s.Axes[1].Values = []string{"4", "40", "v4"}
	if err := s.Validate(); err != nil {
		t.Errorf("distinct values: %v", err)
	}
	s = small()
	s.Sets = append(s.Sets, "engine.gpu_memory_utilization=0.3")
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "both set") {
		t.Errorf("set and varied: %v", err)
	}
}

// Ctrl-C while the grid is loaded stops the plan.
func TestPlanAnswersCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := small().PlanContext(ctx); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("cancelled plan: %v", err)
	}
	if _, err := small().Run(ctx, Options{}); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("cancelled run: %v", err)
	}
}

// A cell file in its cell's place but written for another cell (its key
// differs, its index matches: a directory of another sweep's values, or
// a hand edit) is not taken for this cell. Without readCell's key check
// a resume would report the other cell's result under this key.
func TestCellKeyChecked(t *testing.T) {
	s := small()
	s.Axes = s.Axes[:1]
	s.Seeds = 1
	dir := t.TempDir()
	first := run(t, s, Options{Dir: dir})
	p := cellPath(dir, first[1].Cell)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["key"] = first[0].Key
	b, _ = json.Marshal(m)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.readCell(dir, first[1].Cell); err == nil || !strings.Contains(err.Error(), "want cell 1") {
		t.Fatalf("cell file with another cell's key: %v", err)
	}
	if _, _, _, err := Merge([]string{dir}); err == nil || !strings.Contains(err.Error(), p) {
		t.Fatalf("merge over it: %v", err)
	}
}

// A cell file or manifest past its bound is refused unread.
func TestCellFileBound(t *testing.T) {
	s := small()
	s.Axes = s.Axes[:1]
	s.Seeds = 1
	dir := t.TempDir()
	first := run(t, s, Options{Dir: dir})
	p := cellPath(dir, first[0].Cell)
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	defer func(n int64) { maxCellBytes = n }(maxCellBytes)
	maxCellBytes = st.Size()
	if r, err := s.readCell(dir, first[0].Cell); err != nil || r == nil {
		t.Fatalf("at the bound: %v", err)
	}
	maxCellBytes--
	if _, err := s.readCell(dir, first[0].Cell); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("one past the bound: %v", err)
	}
}

// sweep.json past its bound is refused unread, at resume and at merge.
func TestManifestBound(t *testing.T) {
	s := small()
	s.Axes = s.Axes[:1]
	s.Seeds = 1
	dir := t.TempDir()
	run(t, s, Options{Dir: dir})
	st, err := os.Stat(filepath.Join(dir, manifestName))
	if err != nil {
		t.Fatal(err)
	}
	defer func(n int64) { maxManifestBytes = n }(maxManifestBytes)
	maxManifestBytes = st.Size()
	if _, _, _, err := Merge([]string{dir}); err != nil {
		t.Fatalf("at the bound: %v", err)
	}
	maxManifestBytes--
	if _, _, _, err := Merge([]string{dir}); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("one past the bound, merge: %v", err)
	}
	if _, err := s.Run(context.Background(), Options{Dir: dir}); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("one past the bound, resume: %v", err)
	}
}
