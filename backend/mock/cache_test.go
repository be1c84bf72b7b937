package mock

import (
	"math/rand/v2"
	"slices"
	"testing"

	"statesim/model"
	"statesim/sched"
)

// A fresh cache holds nothing and reads zeros; a write holds one chunk,
// a read holds none.
func TestCacheHoldsWhatIsWritten(t *testing.T) {
	c := newCache(1000, 3000, 1024) // pages of 3 chunks: 1024, 1024, 952
	table := int64(len(c.chunks)) * chunkSlotBytes
	if got := c.bytes(); got != table {
		t.Fatalf("fresh cache holds %d bytes, want its %d-byte chunk table", got, table)
	}
	if r := c.span(7, 2100, 10, false); !slices.Equal(r, make([]float32, 10)) {
		t.Fatalf("unwritten span reads %v", r)
	}
	if c.held != 0 {
		t.Fatalf("a read allocated %d elements", c.held)
	}
	w := c.span(7, 2100, 10, true)
	w[3] = 5
	if c.held != 952 {
		t.Fatalf("one write into the page's last chunk holds %d elements, want 952", c.held)
	}
	if r := c.span(7, 2100, 10, false); r[3] != 5 {
		t.Fatalf("read back %v", r)
	}
	if r := c.span(8, 2100, 10, false); r[3] != 0 {
		t.Fatalf("another page reads %v", r)
	}
	if slices.ContainsFunc(c.zero, func(v float32) bool { return v != 0 }) {
		t.Fatal("the zero chunk was written")
	}
}

// gather and scatter cross chunks and pages: a wrapped write over the
// model's own pages may straddle two.
func TestCacheScatterAcrossPages(t *testing.T) {
	c := newCache(4, 3000, 1024)
	src := make([]float32, 2500)
	for i := range src {
		src[i] = float32(i + 1)
	}
	c.scatter(2000, src) // pages 0 (from 2000) and 1 (to 1500)
	if c.held != 1024+952+1024+1024 {
		t.Fatalf("held %d elements", c.held)
	}
	got := make([]float32, len(src))
	c.gather(got, 2000)
	if !slices.Equal(got, src) {
		t.Fatal("gather differs from scatter")
	}
	if v := c.span(1, 1499, 2, false); v[0] != 2500 || v[1] != 0 {
		t.Fatalf("page 1 at 1499: %v", v)
	}
	c.reset(4)
	c.gather(got, 2000)
	if slices.ContainsFunc(got, func(v float32) bool { return v != 0 }) {
		t.Fatal("reset left bytes behind")
	}
}

// Every access the mock makes of a geometry's page lies in one chunk:
// the state part in the first, each K and V row in one.
func TestChunkGeometry(t *testing.T) {
	for _, c := range []struct {
		preset string
		block  int
	}{{"tiny-hybrid", 16}, {"tiny-attention", 16}, {"jamba-reasoning-3b", 16}, {"jamba-reasoning-3b", 2048}, {"tiny-hybrid-mamba2", 16}} {
		shape, err := model.Preset(c.preset)
		if err != nil {
			t.Fatal(err)
		}
		m, err := New(Config{Shape: shape, Layout: shape.Layout(c.block), NumBlocks: 4}, nil)
		if err != nil {
			t.Fatal(err)
		}
		g := &m.geo
		ch := chunkGeometry(g)
		if ch < g.StateOffset+g.StateElems || ch > g.PageElems {
			t.Errorf("%s/%d: chunk %d outside [state part %d, page %d]", c.preset, c.block, ch, g.StateOffset+g.StateElems, g.PageElems)
		}
		if g.KVElems > 0 {
			if row := g.KVElems / int64(g.BlockSize); ch%row != 0 && ch != g.PageElems {
				t.Errorf("%s/%d: chunk %d splits %d-element K/V rows", c.preset, c.block, ch, row)
			}
		}
	}
}

// The mock's host memory follows the blocks a run writes, not the pool: a
// pool of 200,000 blocks (819 MB as dense float32 pages) holds a small
// run in its chunk table and a few pages.
func TestCacheFollowsTheRun(t *testing.T) {
	e := newEngine(t, engineCfg{numBlocks: 200_000, budget: 64, maxSeqs: 8, version: sched.Fixed, weightSeed: 3})
	e.run(randomArrivals(rand.New(rand.NewPCG(5, 5)), 40, 40, 12, 1))
	bound, err := CacheBound(e.mk.cfg)
	if err != nil {
		t.Fatal(err)
	}
	held := e.mk.CacheBytes()
	var table int64
	for _, c := range e.mk.tensors {
		table += int64(len(c.chunks)) * chunkSlotBytes
	}
	if held <= table || held > bound/50 {
		t.Fatalf("held %d bytes (chunk table %d) of a %d-byte bound; want a few pages past the table and under 2%% of the bound", held, table, bound)
	}
	if st := e.mk.Stats(); st.CacheBytes != held || st.MaxDelta != 0 {
		t.Fatalf("stats %+v: want cache_bytes %d and a clean, exact run", st, held)
	}
	t.Logf("held %d bytes: %d of chunk table, %d of pages; bound %d", held, table, held-table, bound)
}
