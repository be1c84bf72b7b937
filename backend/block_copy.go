package backend

import (
	"fmt"
	"slices"

	"statesim/invariant"
	"statesim/model"
	"statesim/sched"
	"statesim/sim"
	"statesim/statecache"
)

// A step's copies-on-write (fine-grained prefix hits, #46384) run after
// the worker zeroes new blocks and before the forward
// (copy_kv_cache_blocks_inplace, vllm/v1/worker/utils.py, called from
// gpu_model_runner.py _update_states and gpu/model_runner.py
// update_requests @ 6adad0876). Zeroing writes no record here (a zeroed
// block reads as whatever the reader's check expects of a fresh block),
// so the copies are the step's first writes.
//
// The worker copies with one gather and one scatter
// (blocks[dst] = blocks[src]): every source is read before any
// destination is written, so a source that is also a destination of the
// same step gives its bytes from before the step.

// blockCopies performs out.BlockCopies and checks the partial hits among
// them: a request whose hit ends inside a block gets a private copy
// (CopyPartialHit), and the copy must carry the prefix the cache entry
// stood for. A producer's copy (CopyProducer) is not checked here: its
// destination is the cache's block now, and readers reaching it through
// a hit are checked as any hit reader.
func (s *Symbolic) blockCopies(out *sched.Output, now sim.Time) error {
	if !s.Pool.PrefixCaching() {
		return fmt.Errorf("symbolic: step %d copies %d blocks without prefix caching", out.Step, len(out.BlockCopies))
	}
	n := int32(s.Pool.NumBlocks())
	s.copied, s.stateCopyRead = s.copied[:0], s.stateCopyRead[:0]
	for _, c := range out.BlockCopies {
		if c.Src <= 0 || c.Src >= n || c.Dst <= 0 || c.Dst >= n || c.Group < 0 || int(c.Group) >= len(s.layout.Groups) {
			return fmt.Errorf("symbolic: step %d copies block %d over block %d of group %d: outside the pool of %d blocks and %d groups",
				out.Step, c.Src, c.Dst, c.Group, n, len(s.layout.Groups))
		}
		s.copied = append(s.copied, s.Prov.Get(c.Src))
	}
	for i := range out.BlockCopies {
		c := &out.BlockCopies[i]
		p := s.copied[i]
		kind, g := s.groupOf(c.Group)
		switch {
		case c.Kind != statecache.CopyPartialHit:
			s.Prov.PutCopy(c.Dst, p, s.step)
		case kind == model.Attention:
			s.partialKV(out, c, g, p, now)
		case kind == model.Mamba:
			s.partialState(out, c, g, p, now)
		default:
			// A group of its own block size (a drafter's sliding window):
			// its partial hits are not modelled, the bytes just move.
			s.Prov.PutCopy(c.Dst, p, s.step)
		}
	}
	return nil
}

// groupOf is pool group id's kind and its index among the layout's
// groups of that kind (the index the backend's messages use).
func (s *Symbolic) groupOf(id int32) (model.LayerKind, int) {
	kind := s.layout.Groups[id].Kind
	idx := 0
	for _, g := range s.layout.Groups[:id] {
		if g.Kind == kind {
			idx++
		}
	}
	return kind, idx
}

// partialKV checks attention group g's copy for a partial hit: the
// reader's table holds c.Dst at the block position of its last hit token,
// whose first positions (need) it reads as the prefix's. The source must
// be the cache entry's block (group and hash) and hold its writer's
// undamaged K/V for those positions. Either way c.Dst then holds the
// reader's K/V for them (AdoptKV), so its writes from mid-block on are
// its own and a mismatch is reported once.
func (s *Symbolic) partialKV(out *sched.Output, c *statecache.BlockCopy, g int, p statecache.Provenance, now sim.Time) {
	pos := (int(c.Tokens) - 1) / s.bs
	need := int(c.Tokens) - pos*s.bs
	rec := s.Pool.Record(c.Src)
	var why string
	switch {
	case rec.Group != c.Group || rec.Hash != c.Hash:
		why = fmt.Sprintf("the cache entry was %s; block %d is now %s", entry(c.Group, c.Hash, c.Tokens, c.Writer), c.Src, entry(rec.Group, rec.Hash, rec.Tokens, rec.Writer))
	case p.Content != statecache.KV || p.Writer != rec.Writer || p.Tainted || int(p.Tokens) < need:
		why = fmt.Sprintf("the cache says request %d wrote its first %d positions (%s), the bytes hold %s",
			rec.Writer, need, entry(rec.Group, rec.Hash, rec.Tokens, rec.Writer), kvBytes(p))
	}
	if why != "" {
		s.copyRead(out, c, p, now, func() string {
			return fmt.Sprintf("attention group %d copies block %d into block %d for a partial prefix hit of %d tokens (block position %d, %d positions): %s",
				g, c.Src, c.Dst, c.Tokens, pos, need, why)
		})
	}
	s.Prov.AdoptKV(c.Dst, c.Req, need, s.step)
}

// partialState checks Mamba group g's copy for a partial hit: the state
// the reader restores from c.Dst must be the cache entry's, its writer's
// state after exactly c.Tokens tokens (MambaRestoreMismatch, as a
// restore through a block-aligned hit). c.Dst then holds the reader's
// state after c.Tokens, carrying the source's taint (and a mismatch's),
// so the row that continues from it reads its own state. A mismatch is
// reported once per reader, naming the first group's copy, as a restore
// is.
func (s *Symbolic) partialState(out *sched.Output, c *statecache.BlockCopy, g int, p statecache.Provenance, now sim.Time) {
	why := statecache.MambaRestoreMismatch(c.Src, p, s.Pool.Record(c.Src), c.Group, c.Hash, int(c.Tokens))
	if why != "" && !slices.Contains(s.stateCopyRead, c.Req) {
		s.stateCopyRead = append(s.stateCopyRead, c.Req)
		s.copyRead(out, c, p, now, func() string {
			return fmt.Sprintf("Mamba group %d copies block %d into block %d for a partial prefix hit of %d tokens: %s", g, c.Src, c.Dst, c.Tokens, why)
		})
	}
	s.Prov.WriteState(c.Dst, c.Req, int(c.Tokens), s.step, p.Tainted || why != "")
}

// copyRead reports c's reader reading wrong bytes through the copy, and
// marks it corrupt when it is in the step's batch.
func (s *Symbolic) copyRead(out *sched.Output, c *statecache.BlockCopy, p statecache.Provenance, now sim.Time, detail func() string) {
	for i := range out.Rows {
		if r := out.Rows[i].Req; r.ID == c.Req {
			s.corrupt(r)
			break
		}
	}
	v := invariant.Violation{Invariant: invariant.StaleSlotRead, Step: s.step, TimeNS: int64(now), RequestID: int64(c.Req), Slot: int64(c.Src), PrevOwner: int64(p.Writer)}
	if s.Rec.Wants(invariant.StaleSlotRead) {
		v.Detail = detail()
	}
	s.Rec.Add(v)
}

// entry names a cache entry for the messages.
func entry(g int32, h statecache.BlockHash, tokens int32, writer statecache.RequestID) string {
	return fmt.Sprintf("prefix %#x of %d tokens in group %d, written by request %d", uint64(h), tokens, g, writer)
}

// kvBytes is describe with the positions a KV block holds.
func kvBytes(p statecache.Provenance) string {
	if p.Content != statecache.KV {
		return describe(p)
	}
	t := ""
	if p.Tainted {
		t = ", tainted"
	}
	return fmt.Sprintf("KV of request %d for %d positions (step %d)%s", p.Writer, p.Tokens, p.Step, t)
}
