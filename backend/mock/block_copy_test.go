package mock

import (
	"testing"

	"statesim/statecache"
)

// fillPage writes v + element index into every element of page b.
func fillPage(c *cache, b int32, v float32) {
	for off := int64(0); off < c.pageElems; off += c.chunkElems {
		s := c.span(b, off, min(c.chunkElems, c.pageElems-off), true)
		for i := range s {
			s[i] = v + float32(off) + float32(i)
		}
	}
}

// pageOf reads page b whole.
func pageOf(c *cache, b int32) []float32 {
	p := make([]float32, c.pageElems)
	c.gather(p, int64(b)*c.pageElems)
	return p
}

// The mock's copies-on-write copy each block's page in every cache
// tensor; a never-written page copies as zeros, and a step's copies read
// every source before writing (a chain hands on the old bytes).
func TestMockBlockCopies(t *testing.T) {
	sh := tinyShape(t)
	m, err := New(Config{Shape: sh, Layout: sh.Layout(16), NumBlocks: 8}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.tensors) == 0 {
		t.Fatal("no cache tensor")
	}
	before := make([][][]float32, len(m.tensors))
	for ti, c := range m.tensors {
		fillPage(c, 2, 100*float32(ti+1))
		fillPage(c, 4, -7)
		fillPage(c, 5, -9)
		before[ti] = [][]float32{pageOf(c, 2), pageOf(c, 4)}
	}
	copies := []statecache.BlockCopy{
		{Src: 2, Dst: 4, Kind: statecache.CopyPartialHit},
		{Src: 4, Dst: 6, Kind: statecache.CopyProducer},
		{Src: 3, Dst: 5, Kind: statecache.CopyPartialHit}, // page 3 never written
	}
	if err := m.copyBlocks(copies); err != nil {
		t.Fatal(err)
	}
	for ti, c := range m.tensors {
		for _, w := range []struct {
			page int32
			want []float32
		}{{2, before[ti][0]}, {4, before[ti][0]}, {6, before[ti][1]}, {5, make([]float32, c.pageElems)}} {
			i, want := w.page, w.want
			got := pageOf(c, i)
			for e := range got {
				if got[e] != want[e] {
					t.Fatalf("tensor %d page %d element %d: %g, want %g", ti, i, e, got[e], want[e])
				}
			}
		}
	}
	if err := m.copyBlocks([]statecache.BlockCopy{{Src: 1, Dst: 8}}); err == nil {
		t.Fatal("a copy past the pool was accepted")
	}
}
