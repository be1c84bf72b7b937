package sweep

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"statesim/internal/infile"
	"statesim/internal/outfile"
)

// Options steer one sweep invocation; none of them changes a result.
type Options struct {
	// Dir is the output directory: its manifest, one file per finished
	// cell, and the tables. Empty runs in memory only (no resume).
	Dir string
	// Workers is the number of cells run at once (at least 1).
	Workers int
	// Shard restricts the run to a deterministic subset of the cells.
	Shard Shard
	// Progress, when set, is called after each cell (from one goroutine
	// at a time), with whether the cell was resumed from Dir.
	Progress func(done, total int, r *Result, resumed bool)
}

// DirError is a failure of the output directory (it cannot be created or
// written, or holds another sweep or a corrupt sweep.json): the user's
// --out is at fault, not the sweep.
type DirError struct {
	Dir string
	Err error
}

func (e *DirError) Error() string { return e.Err.Error() }
func (e *DirError) Unwrap() error { return e.Err }

// dirErr wraps a failure of dir as a DirError (nil stays nil).
func dirErr(dir string, err error) error {
	if err == nil {
		return nil
	}
	return &DirError{Dir: dir, Err: err}
}

// ErrInterrupted means the context was cancelled; finished cells are on
// disk and a rerun resumes after them.
var ErrInterrupted = errors.New("sweep interrupted")

const manifestName = "sweep.json"

// Bounds on the files a sweep directory holds: a manifest is the sweep's
// definition (its values, a few KiB), a cell one run's result (about 2
// KiB). A corrupt or planted file larger than this is refused unread.
var (
	maxManifestBytes int64 = 16 << 20
	maxCellBytes     int64 = 1 << 20
)

// manifest identifies a sweep directory's grid so that a resume or a merge
// never mixes cells of different sweeps.
type manifest struct {
	Spec     *Spec  `json:"sweep"`
	BaseSeed uint64 `json:"base_seed"`
	Cells    int    `json:"cells"`
}

func (s *Spec) manifestBytes(cells []Cell) []byte {
	b, _ := json.MarshalIndent(manifest{Spec: s, BaseSeed: cells[0].Seed, Cells: len(cells)}, "", "  ")
	return append(b, '\n')
}

// cellPath is where a finished cell lives.
func cellPath(dir string, c Cell) string {
	return filepath.Join(dir, "cells", fmt.Sprintf("%06d.json", c.Index))
}

// prepareDir writes the manifest or checks that an existing one is this
// sweep's.
func (s *Spec) prepareDir(dir string, cells []Cell) error {
	want := s.manifestBytes(cells)
	p := filepath.Join(dir, manifestName)
	have, err := infile.ReadFile(p, "sweep manifest", maxManifestBytes)
	if err == nil {
		if !bytes.Equal(have, want) {
			if err := checkManifest(p, have); err != nil {
				return err
			}
			return fmt.Errorf("%s holds a different sweep (its %s differs); use another --out directory or remove it", dir, manifestName)
		}
		return nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return outfile.WriteAtomic(p, want)
}

// checkManifest says whether a sweep.json is readable at all: a corrupt
// one is not "a different sweep".
func checkManifest(path string, b []byte) error {
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil || m.Spec == nil {
		why := "no sweep in it"
		if err != nil {
			why = err.Error()
		}
		return fmt.Errorf("%s is corrupt (%s): remove it to start the directory afresh (finished cells are kept and reused), or use another --out", path, why)
	}
	return nil
}

// loadCell reads a finished cell; ok is false when it is missing or not
// this cell (then it is run again).
func (s *Spec) loadCell(dir string, c Cell) (*Result, bool) {
	r, err := s.readCell(dir, c)
	return r, err == nil && r != nil
}

// readCell reads a finished cell: nil, nil when it is not there; an error
// naming the file when it is there but corrupt or another cell's.
func (s *Spec) readCell(dir string, c Cell) (*Result, error) {
	p := cellPath(dir, c)
	b, err := infile.ReadFile(p, "sweep cell file", maxCellBytes)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: corrupt cell (%v): delete it and rerun its shard to recompute it", p, err)
	}
	if r.Key != s.Key(c) || r.Index != c.Index {
		return nil, fmt.Errorf("%s: holds cell %d %q, want cell %d %q: delete it and rerun its shard", p, r.Index, r.Key, c.Index, s.Key(c))
	}
	return &r, nil
}

func encodeResult(r *Result) []byte {
	b, _ := json.MarshalIndent(r, "", "  ")
	return append(b, '\n')
}

// Run runs the shard's cells of the sweep, skipping cells already in
// opt.Dir, and returns their results in grid order. On cancellation it
// returns the finished results and ErrInterrupted.
func (s *Spec) Run(ctx context.Context, opt Options) ([]*Result, error) {
	cells, err := s.PlanContext(ctx)
	if err != nil {
		return nil, err
	}
	if opt.Dir != "" {
		if err := os.MkdirAll(opt.Dir, 0o755); err != nil {
			return nil, dirErr(opt.Dir, err)
		}
		if err := s.prepareDir(opt.Dir, cells); err != nil {
			return nil, dirErr(opt.Dir, err)
		}
	}
	var mine []Cell
	for _, c := range cells {
		if opt.Shard.Has(c.Index) {
			mine = append(mine, c)
		}
	}
	results := make([]*Result, len(mine))
	var mu sync.Mutex
	done := 0
	report := func(r *Result, resumed bool) {
		mu.Lock()
		defer mu.Unlock()
		done++
		if opt.Progress != nil {
			opt.Progress(done, len(mine), r, resumed)
		}
	}
	var todo []int
	for i, c := range mine {
		if opt.Dir != "" {
			if r, ok := s.loadCell(opt.Dir, c); ok {
				results[i] = r
				report(r, true)
				continue
			}
		}
		todo = append(todo, i)
	}
	workers := max(1, min(opt.Workers, len(todo)))
	jobs := make(chan int)
	errs := make([]error, len(mine))
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				r, err := s.RunCell(mine[i])
				if err == nil && opt.Dir != "" {
					err = dirErr(opt.Dir, outfile.WriteAtomic(cellPath(opt.Dir, mine[i]), encodeResult(r)))
				}
				if err != nil {
					errs[i] = fmt.Errorf("cell %s: %w", s.Key(mine[i]), err)
					continue
				}
				results[i] = r
				report(r, false)
			}
		}()
	}
	interrupted := false
feed:
	for _, i := range todo {
		select {
		case <-ctx.Done():
			interrupted = true
			break feed
		case jobs <- i:
		}
	}
	close(jobs)
	wg.Wait()
	// The first error in grid order, so the message does not depend on
	// goroutine timing.
	for _, e := range errs {
		if e != nil {
			return compact(results), e
		}
	}
	if interrupted {
		return compact(results), ErrInterrupted
	}
	return results, nil
}

func compact(rs []*Result) []*Result {
	out := rs[:0:0]
	for _, r := range rs {
		if r != nil {
			out = append(out, r)
		}
	}
	return out
}

// Merge joins the cells of shard directories of one sweep into grid
// order. It fails when the directories hold different sweeps; missing
// lists the keys of cells no directory has.
func Merge(dirs []string) (spec *Spec, results []*Result, missing []string, err error) {
	var first []byte
	var m manifest
	for _, d := range dirs {
		b, err := infile.ReadFile(filepath.Join(d, manifestName), "sweep manifest", maxManifestBytes)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%s: not a sweep output directory: %w", d, err)
		}
		if err := checkManifest(filepath.Join(d, manifestName), b); err != nil {
			return nil, nil, nil, err
		}
		if first == nil {
			first = b
			json.Unmarshal(b, &m)
			spec = m.Spec
		} else if !bytes.Equal(first, b) {
			return nil, nil, nil, fmt.Errorf("%s holds a different sweep than %s (their %s differ)", d, dirs[0], manifestName)
		}
	}
	if spec == nil {
		return nil, nil, nil, fmt.Errorf("sweep merge: no directories given")
	}
	if err := spec.Validate(); err != nil {
		return nil, nil, nil, err
	}
	// The manifest fixes the grid: merging needs no scenario file.
	for _, c := range spec.cells(m.BaseSeed) {
		var got *Result
		for _, d := range dirs {
			r, err := spec.readCell(d, c)
			if err != nil {
				return nil, nil, nil, err
			}
			if r != nil {
				got = r
				break
			}
		}
		if got == nil {
			missing = append(missing, spec.Key(c))
			continue
		}
		results = append(results, got)
	}
	return spec, results, missing, nil
}
