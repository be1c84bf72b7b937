package backend

import (
	"strings"
	"testing"

	"statesim/invariant"
	"statesim/model"
	"statesim/sched"
	"statesim/statecache"
)

func preset(t *testing.T, name string) model.Shape {
	t.Helper()
	sh, err := model.Preset(name)
	if err != nil {
		t.Fatal(err)
	}
	return sh
}

func newReq(id statecache.RequestID, prompt int, table statecache.BlockTable) *sched.Request {
	return &sched.Request{ID: id, NumPromptTokens: prompt, MaxTokens: 4, CorruptStep: -1, Blocks: table}
}

// execute runs one step of rows (each a request and its computed and
// scheduled tokens) with copies.
func execute(t *testing.T, s *Symbolic, step int64, copies []statecache.BlockCopy, rows ...sched.Row) {
	t.Helper()
	out := &sched.Output{Step: step, BlockCopies: copies, Rows: rows}
	if err := s.Execute(out, 0); err != nil {
		t.Fatal(err)
	}
}

// attnHit is an attention-only model with prefix caching where writer 1
// computed 3 blocks (cached), and reader 2 hit the first of them; the
// reader's prompt shares 5 more tokens of the writer's second block,
// which the fine-grained hit gives it through a copy into its own second
// block.
type attnHit struct {
	s      *Symbolic
	rec    *invariant.Recorder
	w, r   *sched.Request
	bs     int
	copyOf statecache.BlockCopy
}

func newAttnHit(t *testing.T) *attnHit {
	sh := preset(t, "tiny-attention")
	l := sh.Layout(16)
	m, err := statecache.NewKVCacheManagerWith(&l, 64, statecache.ManagerOptions{EnablePrefixCaching: true})
	if err != nil {
		t.Fatal(err)
	}
	rec := invariant.NewRecorder(10)
	s := NewSymbolic(&sh, l, m.Pool, 64, rec)
	s.KV = m
	bs := l.BlockSize
	w := newReq(1, 3*bs+1, m.NewTable())
	w.BlockHashes = []statecache.BlockHash{11, 12, 13}
	if ok, err := m.AllocateSlots(1, &w.Blocks, 0, 0, 3*bs, 3*bs, w.BlockHashes); !ok || err != nil {
		t.Fatalf("writer: %v %v", ok, err)
	}
	execute(t, s, 0, nil, sched.Row{Req: w, NumScheduled: 3 * bs})
	r := newReq(2, 2*bs+3, m.NewTable())
	r.BlockHashes = []statecache.BlockHash{11, 99}
	hit := m.GetComputedBlocks(&r.Blocks, r.BlockHashes, r.NumPromptTokens, false)
	if hit != bs {
		t.Fatalf("reader hit %d tokens, want %d", hit, bs)
	}
	if ok, err := m.AllocateSlots(2, &r.Blocks, 0, hit, r.NumPromptTokens, r.NumPromptTokens, r.BlockHashes); !ok || err != nil {
		t.Fatalf("reader: %v %v", ok, err)
	}
	src := w.Blocks.Attn[0][1]
	c := statecache.BlockCopy{Src: src, Dst: r.Blocks.Attn[0][1], Group: m.PoolGroup(0), Kind: statecache.CopyPartialHit,
		Req: 2, Hash: m.Pool.Record(src).Hash, Tokens: int32(bs + 5), Writer: 1}
	return &attnHit{s: s, rec: rec, w: w, r: r, bs: bs, copyOf: c}
}

// readerRow is the reader's prefill from its partial hit on.
func (h *attnHit) readerRow() sched.Row {
	return sched.Row{Req: h.r, NumComputed: h.bs + 5, NumScheduled: h.r.NumPromptTokens - h.bs - 5}
}

func TestPartialHitCopyAttention(t *testing.T) {
	t.Run("valid copy: the reader's row runs clean", func(t *testing.T) {
		h := newAttnHit(t)
		execute(t, h.s, 1, []statecache.BlockCopy{h.copyOf}, h.readerRow())
		execute(t, h.s, 2, nil, sched.Row{Req: h.r, NumComputed: h.r.NumPromptTokens, NumScheduled: 1})
		if n := h.rec.Total(); n != 0 {
			t.Fatalf("%d violations: %v", n, h.rec.Kept(invariant.StaleSlotRead))
		}
		if got := h.s.Prov.Get(h.copyOf.Dst); got.Writer != 2 || got.Content != statecache.KV {
			t.Fatalf("the copy holds %+v, not the reader's K/V", got)
		}
	})
	t.Run("no copy: the reader starts mid-block on bytes not its own", func(t *testing.T) {
		h := newAttnHit(t)
		execute(t, h.s, 1, nil, h.readerRow())
		if n := h.rec.Count(invariant.StaleSlotRead); n != 1 {
			t.Fatalf("%d stale reads, want 1", n)
		}
	})
	t.Run("source overwritten by another request", func(t *testing.T) {
		h := newAttnHit(t)
		// Request 3 writes the writer's second block (as if it had been
		// freed and handed on) before the copy runs.
		intruder := newReq(3, h.bs, statecache.BlockTable{Attn: [][]int32{{h.copyOf.Src}}})
		execute(t, h.s, 1, nil, sched.Row{Req: intruder, NumScheduled: h.bs})
		execute(t, h.s, 2, []statecache.BlockCopy{h.copyOf}, h.readerRow())
		v := h.rec.Kept(invariant.StaleSlotRead)
		if len(v) != 1 || h.rec.Total() != 1 {
			t.Fatalf("violations %v, want one stale read", v)
		}
		if v[0].RequestID != 2 || v[0].Slot != int64(h.copyOf.Src) || v[0].PrevOwner != 3 || v[0].Step != 2 ||
			!strings.Contains(v[0].Detail, "partial prefix hit") || !strings.Contains(v[0].Detail, "KV of request 3") {
			t.Fatalf("violation %+v", v[0])
		}
		if h.r.CorruptStep != 2 {
			t.Fatalf("reader corrupt at step %d, want 2", h.r.CorruptStep)
		}
	})
	t.Run("cache entry gone", func(t *testing.T) {
		h := newAttnHit(t)
		c := h.copyOf
		c.Hash++ // the entry the copy was queued for is not the block's
		execute(t, h.s, 1, []statecache.BlockCopy{c}, h.readerRow())
		v := h.rec.Kept(invariant.StaleSlotRead)
		if len(v) != 1 || !strings.Contains(v[0].Detail, "the cache entry was") {
			t.Fatalf("violations %v, want one stale read naming the entry", v)
		}
	})
}

// stateHit is the tiny hybrid (3 Mamba groups, then attention) over a
// prefix-caching pool with hand-built tables: writer 1 prefills 10
// tokens, inside the first block, and the cache records each group's
// block as its prefix of 10 tokens; reader 2 gets copies of them.
type stateHit struct {
	s      *Symbolic
	rec    *invariant.Recorder
	w, r   *sched.Request
	copies []statecache.BlockCopy
}

func newStateHit(t *testing.T) *stateHit {
	sh := preset(t, "tiny-hybrid")
	l := sh.Layout(16)
	pool := statecache.NewBlockPoolWith(64, statecache.PoolOptions{EnablePrefixCaching: true, Groups: len(l.Groups)})
	rec := invariant.NewRecorder(10)
	s := NewSymbolic(&sh, l, pool, 64, rec)
	take := func(req statecache.RequestID, g int) int32 {
		b := make([]int32, 1)
		if err := pool.GetNewBlocks(req, int32(g), b); err != nil {
			t.Fatal(err)
		}
		return b[0]
	}
	var wt, rt statecache.BlockTable
	h := &stateHit{s: s, rec: rec}
	for g, grp := range l.Groups {
		wb, rb := take(1, g), take(2, g)
		if err := pool.CacheFullBlocks(1, int32(g), []int32{wb}, []statecache.BlockHash{77}, 0, 1, 10); err != nil {
			t.Fatal(err)
		}
		if grp.Kind == model.Attention {
			wt.Attn, rt.Attn = append(wt.Attn, []int32{wb}), append(rt.Attn, []int32{rb})
		} else {
			wt.Mamba, rt.Mamba = append(wt.Mamba, wb), append(rt.Mamba, rb)
		}
		h.copies = append(h.copies, statecache.BlockCopy{Src: wb, Dst: rb, Group: int32(g), Kind: statecache.CopyPartialHit,
			Req: 2, Hash: 77, Tokens: 10, Writer: 1})
	}
	h.w, h.r = newReq(1, 20, wt), newReq(2, 15, rt)
	execute(t, s, 0, nil, sched.Row{Req: h.w, NumScheduled: 10})
	return h
}

// readerRow is the reader's prefill from the state after 10 tokens.
func (h *stateHit) readerRow() sched.Row {
	return sched.Row{Req: h.r, NumComputed: 10, NumScheduled: 5, HasInitialState: true}
}

func TestPartialHitCopyMamba(t *testing.T) {
	t.Run("valid copy: the reader restores clean", func(t *testing.T) {
		h := newStateHit(t)
		execute(t, h.s, 1, h.copies, h.readerRow())
		if n := h.rec.Total(); n != 0 {
			t.Fatalf("%d violations: %v", n, h.rec.Kept(invariant.StaleSlotRead))
		}
		if !h.s.Prov.StateValid(h.r.Blocks.Mamba[2], 2, 15) {
			t.Fatalf("reader's slot holds %+v", h.s.Prov.Get(h.r.Blocks.Mamba[2]))
		}
	})
	t.Run("no state copies: the reader reads blocks never written", func(t *testing.T) {
		h := newStateHit(t)
		execute(t, h.s, 1, h.copies[3:], h.readerRow()) // the attention copy only
		if n := h.rec.Count(invariant.StaleSlotRead); n != 1 {
			t.Fatalf("%d stale reads, want 1", n)
		}
	})
	t.Run("the writer moved on: a wrong state", func(t *testing.T) {
		h := newStateHit(t)
		// The writer decodes in place: its blocks hold the state after
		// 11 tokens, not the 10 the cache entry stands for.
		execute(t, h.s, 1, nil, sched.Row{Req: h.w, NumComputed: 10, NumScheduled: 1, Path: sched.PathDecode})
		execute(t, h.s, 2, h.copies, h.readerRow())
		v := h.rec.Kept(invariant.StaleSlotRead)
		if len(v) != 1 || h.rec.Total() != 1 {
			t.Fatalf("violations %v, want one stale read", v)
		}
		if v[0].RequestID != 2 || v[0].Slot != int64(h.copies[0].Src) ||
			!strings.Contains(v[0].Detail, "Mamba group 0 copies") || !strings.Contains(v[0].Detail, "after 11 tokens") {
			t.Fatalf("violation %+v", v[0])
		}
		// The reader carries the damage from the copy on, reported once.
		if p := h.s.Prov.Get(h.r.Blocks.Mamba[0]); !p.Tainted || p.Writer != 2 {
			t.Fatalf("reader's slot holds %+v, want its own tainted state", p)
		}
	})
}

// A producer's copy moves its record, unchecked; every source is read
// before any destination is written, so a chain hands on the old bytes.
func TestProducerCopiesGatherFirst(t *testing.T) {
	h := newStateHit(t)
	a, b, c := h.w.Blocks.Mamba[0], h.r.Blocks.Mamba[0], h.r.Blocks.Mamba[1]
	chain := []statecache.BlockCopy{
		{Src: a, Dst: b, Group: 0, Kind: statecache.CopyProducer, Req: 1, Hash: 77, Tokens: 10, Writer: 1},
		{Src: b, Dst: c, Group: 1, Kind: statecache.CopyProducer, Req: 1, Hash: 77, Tokens: 10, Writer: 1},
	}
	execute(t, h.s, 1, chain)
	if p := h.s.Prov.Get(b); p.Writer != 1 || p.Content != statecache.State || p.Tokens != 10 || p.Step != 1 {
		t.Fatalf("block %d holds %+v, want the writer's state", b, p)
	}
	if p := h.s.Prov.Get(c); p.Content != statecache.Zero {
		t.Fatalf("block %d holds %+v, want %d's bytes from before the step (zeros)", c, p, b)
	}
	if n := h.rec.Total(); n != 0 {
		t.Fatalf("%d violations", n)
	}
}
