package sweep

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"statesim/scenarios"
	"statesim/setup"
)

// Axis is one varied scenario field and its values, in sweep order.
type Axis struct {
	Key    string   `yaml:"key" json:"key"`
	Values []string `yaml:"values" json:"values"`
	// Lines are the sweep file's lines of each value (0: not from a file).
	Lines []int `yaml:"-" json:"-"`
}

// Spec is a sweep: a scenario, fixed overrides, the varied axes and the
// number of seeds per grid point.
type Spec struct {
	Name        string   `yaml:"name" json:"name"`
	Description string   `yaml:"description" json:"description,omitempty"`
	Scenario    string   `yaml:"scenario" json:"scenario"`
	Sets        []string `yaml:"set" json:"set,omitempty"`
	Axes        []Axis   `yaml:"vary" json:"vary"`
	// Seeds runs seeds base, base+1, ... base+Seeds-1, where base is the
	// scenario's seed (after Sets).
	Seeds int `yaml:"seeds" json:"seeds"`
	// Metric is the incidence the chart shows (see Metrics).
	Metric string `yaml:"metric" json:"metric"`

	// File is the sweep definition file, and SetLines the line of each of
	// its Sets, so that a bad value is reported where it was written (0:
	// not from a file, such as --set).
	File     string `yaml:"-" json:"-"`
	SetLines []int  `yaml:"-" json:"-"`
}

// locate rewrites a scenario error caused by one of the sweep's own --set
// values (a fixed set or an axis value) as an error at the sweep file's
// line: the scenario file is not at fault.
func (s *Spec) locate(err error) error {
	var ie *scenarios.InputError
	if s.File == "" || !errors.As(err, &ie) || ie.Set == "" {
		return err
	}
	line := 0
	for i, set := range s.Sets {
		if set == ie.Set && i < len(s.SetLines) {
			line = s.SetLines[i]
		}
	}
	for _, a := range s.Axes {
		for i, v := range a.Values {
			if a.Key+"="+v == ie.Set && i < len(a.Lines) {
				line = a.Lines[i]
			}
		}
	}
	if line == 0 {
		return err
	}
	return &scenarios.InputError{File: s.File, Line: line, Path: ie.Path, Msg: fmt.Sprintf("%s (applied as --set %s to scenario %s)", ie.Msg, ie.Set, s.Scenario)}
}

// ParseVary reads one --vary KEY=v1,v2,... argument.
func ParseVary(s string) (Axis, error) {
	k, vs, ok := strings.Cut(s, "=")
	k = strings.TrimSpace(k)
	if !ok || k == "" {
		return Axis{}, fmt.Errorf("--vary %q: want KEY=v1,v2,... (e.g. engine.gpu_memory_utilization=0.2,0.5,0.9)", s)
	}
	var vals []string
	seen := map[string]bool{}
	for _, v := range strings.Split(vs, ",") {
		v = strings.TrimSpace(v)
		if v == "" {
			return Axis{}, fmt.Errorf("--vary %q: empty value", s)
		}
		if seen[v] {
			return Axis{}, fmt.Errorf("--vary %q: value %q listed twice", s, v)
		}
		seen[v] = true
		vals = append(vals, v)
	}
	return Axis{Key: k, Values: vals}, nil
}

// MaxCells bounds a sweep's grid (values of every axis times seeds): each
// cell is a run and a file, and the grid is listed in memory before the
// first runs. Checked before anything is allocated.
const MaxCells = 1 << 20

// sameValue is a value's identity as a scenario field reads it: 4, "4"
// and 4.0 set an integer field alike, so they are one grid point.
func sameValue(v string) string {
	if f, err := strconv.ParseFloat(v, 64); err == nil && !strings.ContainsAny(v, "xXoObB_") {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return v
}

// Validate checks the spec's shape (not the values: Plan loads every cell).
func (s *Spec) Validate() error {
	if s.Scenario == "" {
		return fmt.Errorf("sweep %s: no scenario", s.Name)
	}
	if s.Seeds < 1 {
		return fmt.Errorf("sweep %s: seeds must be >= 1, got %d", s.Name, s.Seeds)
	}
	if s.Seeds > MaxCells {
		return fmt.Errorf("sweep %s: %d seeds, more than the %d cells a sweep may hold", s.Name, s.Seeds, MaxCells)
	}
	if len(s.Axes) == 0 {
		return fmt.Errorf("sweep %s: nothing to vary: give at least one --vary KEY=v1,v2,...", s.Name)
	}
	keys := map[string]bool{}
	for _, a := range s.Axes {
		if a.Key == "seed" {
			return fmt.Errorf("sweep %s: vary seeds with --seeds N, not --vary seed=...", s.Name)
		}
		if keys[a.Key] {
			return fmt.Errorf("sweep %s: key %s varied twice", s.Name, a.Key)
		}
		keys[a.Key] = true
		if len(a.Values) == 0 {
			return fmt.Errorf("sweep %s: key %s has no values", s.Name, a.Key)
		}
		seen := map[string]string{}
		for _, v := range a.Values {
			if w, ok := seen[sameValue(v)]; ok {
				return fmt.Errorf("sweep %s: key %s: values %q and %q are the same value (one grid point)", s.Name, a.Key, w, v)
			}
			seen[sameValue(v)] = v
		}
	}
	for _, set := range s.Sets {
		if k, _, _ := strings.Cut(set, "="); keys[strings.TrimSpace(k)] {
			return fmt.Errorf("sweep %s: %s is both set (%s) and varied: a varied key takes each of its values, so drop one", s.Name, strings.TrimSpace(k), set)
		}
	}
	cells := s.Seeds
	for _, a := range s.Axes {
		if cells > MaxCells/len(a.Values) {
			return fmt.Errorf("sweep %s: more than the %d cells a sweep may hold (values of every key times seeds): split it into shards of fewer values", s.Name, MaxCells)
		}
		cells *= len(a.Values)
	}
	if cells > MaxCells {
		return fmt.Errorf("sweep %s: %d cells, more than the %d a sweep may hold (values of every key times seeds)", s.Name, cells, MaxCells)
	}
	if _, err := MetricByName(s.Metric); err != nil {
		return fmt.Errorf("sweep %s: %v", s.Name, err)
	}
	return nil
}

// Cell is one run of the grid: a value per axis and a seed. Index is its
// position in grid order (first axis outermost, seed innermost).
type Cell struct {
	Index  int      `json:"index"`
	Values []string `json:"values"`
	Seed   uint64   `json:"seed"`
}

// Key names a cell by its values and seed, e.g.
// "engine.vllm_version=v0.13 engine.gpu_memory_utilization=0.2 seed=3".
func (s *Spec) Key(c Cell) string {
	var b strings.Builder
	for i, a := range s.Axes {
		fmt.Fprintf(&b, "%s=%s ", a.Key, c.Values[i])
	}
	fmt.Fprintf(&b, "seed=%d", c.Seed)
	return b.String()
}

// sets are the --set arguments that build a cell's scenario.
func (s *Spec) sets(c Cell) []string {
	out := append([]string(nil), s.Sets...)
	for i, a := range s.Axes {
		out = append(out, a.Key+"="+c.Values[i])
	}
	return append(out, fmt.Sprintf("seed=%d", c.Seed))
}

// Plan lists every cell in grid order, loading each grid point's scenario
// so a bad key or value fails before anything runs.
func (s *Spec) Plan() ([]Cell, error) { return s.PlanContext(context.Background()) }

// PlanContext is Plan, stopping with ErrInterrupted when ctx is done: a
// large grid takes a while to load.
func (s *Spec) PlanContext(ctx context.Context) ([]Cell, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	base, err := setup.Load(s.Scenario, s.Sets)
	if err != nil {
		return nil, s.locate(err)
	}
	cells := s.cells(base.Scenario.Seed)
	for _, c := range cells {
		if c.Seed != base.Scenario.Seed {
			continue // seeds do not change what validates
		}
		if ctx.Err() != nil {
			return nil, ErrInterrupted
		}
		if _, err := setup.Load(s.Scenario, s.sets(c)); err != nil {
			return nil, s.locate(err)
		}
	}
	return cells, nil
}

// cells enumerates the grid: first axis outermost, seed innermost.
func (s *Spec) cells(baseSeed uint64) []Cell {
	n := s.Seeds
	for _, a := range s.Axes {
		n *= len(a.Values)
	}
	cells := make([]Cell, 0, n)
	idx := make([]int, len(s.Axes))
	for {
		vals := make([]string, len(s.Axes))
		for i, a := range s.Axes {
			vals[i] = a.Values[idx[i]]
		}
		for k := 0; k < s.Seeds; k++ {
			cells = append(cells, Cell{Index: len(cells), Values: vals, Seed: baseSeed + uint64(k)})
		}
		// Odometer over the axes, last axis fastest.
		i := len(idx) - 1
		for ; i >= 0; i-- {
			idx[i]++
			if idx[i] < len(s.Axes[i].Values) {
				break
			}
			idx[i] = 0
		}
		if i < 0 {
			return cells
		}
	}
}

// Shard is a deterministic subset of the cells: shard i of n takes cells
// whose index is i mod n, which spreads expensive corners of the grid.
type Shard struct{ I, N int }

// ParseShard reads "i/n" with 0 <= i < n (a Kubernetes Indexed Job's
// JOB_COMPLETION_INDEX is i).
func ParseShard(s string) (Shard, error) {
	var sh Shard
	a, b, ok := strings.Cut(s, "/")
	if _, err := fmt.Sscanf(a+" "+b, "%d %d", &sh.I, &sh.N); !ok || err != nil || sh.N < 1 || sh.I < 0 || sh.I >= sh.N ||
		fmt.Sprintf("%d/%d", sh.I, sh.N) != strings.TrimSpace(s) {
		return Shard{}, fmt.Errorf("--shard %q: want i/n with 0 <= i < n, e.g. 0/4", s)
	}
	return sh, nil
}

// Has reports whether the shard runs cell index i.
func (sh Shard) Has(i int) bool { return sh.N <= 1 || i%sh.N == sh.I }
