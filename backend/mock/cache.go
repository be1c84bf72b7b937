package mock

import "fmt"

// chunkSlotBytes is a chunk's entry in a cache's chunk table (a slice
// header), held whether or not the chunk is written.
const chunkSlotBytes = 24

// cache is one raw cache tensor: pages of pageElems float32s, one per
// block id, each held in chunks of chunkElems that are allocated on their
// first write. A chunk never written reads as zeros, which is what a
// fresh tensor holds, so a run's host memory follows the chunks it writes,
// not the pool: a pool sized for a GPU's memory costs only what the
// scheduler's tables and stray (wrapped) writes reach. Chunks are never
// freed (vLLM never clears a page on free) and never move, so a slice into
// one stays valid for the whole run.
//
// Chunks split each page at multiples of chunkElems (chunkGeometry): a
// page's state part (conv window and recurrent state) lies in its first
// chunk and no K or V row crosses a chunk, so every access but the
// wrapped prefill write, which gather and scatter serve, is one slice.
type cache struct {
	pages      int64
	pageElems  int64
	chunkElems int64
	perPage    int64       // chunks per page
	chunks     [][]float32 // [page·perPage + k]; nil: never written
	zero       []float32   // chunkElems zeros, read for unwritten chunks; never written
	held       int64       // elements of the chunks allocated
}

// chunkGeometry is the chunk size of a geometry's pages: at least the
// state part (so it is one slice), a whole number of K/V rows (so no row
// crosses a chunk), at least 1024 elements (4 KiB, an OS page), at most
// the page.
func chunkGeometry(g *Geometry) int64 {
	c := max(g.StateOffset+g.StateElems, g.ConvElems, 1024)
	if g.KVElems > 0 {
		row := g.KVElems / int64(g.BlockSize)
		c = (c + row - 1) / row * row
	}
	return min(c, g.PageElems)
}

func newCache(pages, pageElems, chunkElems int64) *cache {
	per := (pageElems + chunkElems - 1) / chunkElems
	return &cache{pages: pages, pageElems: pageElems, chunkElems: chunkElems, perPage: per,
		chunks: make([][]float32, pages*per), zero: make([]float32, chunkElems)}
}

// elems is the tensor's size in elements, as a dense tensor would hold.
func (c *cache) elems() int64 { return c.pages * c.pageElems }

// bytes is what the cache holds: its chunk table and the chunks written.
func (c *cache) bytes() int64 { return int64(len(c.chunks))*chunkSlotBytes + c.held*4 }

// span returns elements [off, off+n) of page b, which must lie in one
// chunk; write allocates the chunk, a read of an unwritten one gets
// zeros (not to be written).
func (c *cache) span(b int32, off, n int64, write bool) []float32 {
	k := off / c.chunkElems
	in := off - k*c.chunkElems
	if b < 0 || int64(b) >= c.pages || off < 0 || n < 0 || off+n > c.pageElems || in+n > c.chunkElems {
		panic(fmt.Sprintf("mock: cache access [%d, %d) of page %d crosses a %d-element chunk or the %d-element page", off, off+n, b, c.chunkElems, c.pageElems))
	}
	i := int64(b)*c.perPage + k
	ch := c.chunks[i]
	if ch == nil {
		if !write {
			return c.zero[in : in+n]
		}
		ch = make([]float32, min(c.chunkElems, c.pageElems-k*c.chunkElems))
		c.chunks[i] = ch
		c.held += int64(len(ch))
	}
	return ch[in : in+n]
}

// at is span by the tensor's element index.
func (c *cache) at(e, n int64, write bool) []float32 {
	b := e / c.pageElems
	return c.span(int32(b), e-b*c.pageElems, n, write)
}

// gather copies len(dst) elements from element e on, across pages and
// chunks.
func (c *cache) gather(dst []float32, e int64) {
	for len(dst) > 0 {
		n := c.run(e, int64(len(dst)))
		copy(dst, c.at(e, n, false))
		dst, e = dst[n:], e+n
	}
}

// scatter writes src from element e on, across pages and chunks.
func (c *cache) scatter(e int64, src []float32) {
	for len(src) > 0 {
		n := c.run(e, int64(len(src)))
		copy(c.at(e, n, true), src)
		src, e = src[n:], e+n
	}
}

// run is how many of n elements from e lie in e's chunk.
func (c *cache) run(e, n int64) int64 {
	off := e % c.pageElems
	end := min((off/c.chunkElems+1)*c.chunkElems, c.pageElems)
	return min(n, end-off)
}

// reset makes every page read as zeros again over pages pages, keeping the
// chunks it holds for reuse (the reference's private caches).
func (c *cache) reset(pages int64) {
	if need := pages * c.perPage; int64(len(c.chunks)) < need {
		c.chunks = append(c.chunks, make([][]float32, need-int64(len(c.chunks)))...)
	}
	for _, ch := range c.chunks {
		clear(ch)
	}
	c.pages = pages
}

// copyPages copies page src[i] over page dst[i] for every i, as one
// gather then one scatter (blocks[dst] = blocks[src] in vLLM's
// copy_kv_cache_blocks_inplace, vllm/v1/worker/utils.py @ 6adad0876): a
// page that is both a source and a destination gives its bytes from
// before the copies. A chunk never written copies as zeros: the
// destination's chunk, if it holds any, is cleared.
func (c *cache) copyPages(src, dst []int32) {
	direct := true
	for _, d := range dst {
		for _, s := range src {
			direct = direct && s != d
		}
	}
	var saved [][]float32
	if !direct {
		saved = make([][]float32, len(src)*int(c.perPage))
		for i, s := range src {
			for k := range c.perPage {
				if ch := c.chunks[int64(s)*c.perPage+k]; ch != nil {
					saved[int64(i)*c.perPage+k] = append([]float32(nil), ch...)
				}
			}
		}
	}
	for i, s := range src {
		for k := range c.perPage {
			from := c.chunks[int64(s)*c.perPage+k]
			if !direct {
				from = saved[int64(i)*c.perPage+k]
			}
			to := &c.chunks[int64(dst[i])*c.perPage+k]
			switch {
			case from == nil && *to != nil:
				clear(*to)
			case from != nil && *to == nil:
				*to = make([]float32, len(from))
				c.held += int64(len(from))
				fallthrough
			case from != nil:
				copy(*to, from)
			}
		}
	}
}
