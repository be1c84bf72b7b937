package statecache

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"statesim/model"
)

// mambaShape is what lockstep says a request's Mamba groups' tables
// share: everything but the block ids.
type mambaShape struct {
	nulls, runnerNulls                                  string // '.' null, 'x' a block
	numCached, lastState, tokens, srcTokens, held, work int
	allocated, running, runnerSent                      bool
}

func shapeOf(mt *MambaTable) mambaShape {
	mask := func(bl []int32) string {
		var b strings.Builder
		for _, x := range bl {
			if x == NullBlock {
				b.WriteByte('.')
			} else {
				b.WriteByte('x')
			}
		}
		return b.String()
	}
	return mambaShape{mask(mt.Blocks), mask(mt.runner), mt.numCached, mt.lastState, mt.tokens, mt.srcTokens, mt.held, mt.worker,
		mt.allocated, mt.running, mt.runnerSent}
}

// The per-group answers the lockstep shortcuts stand for, as the loops
// over every group computed them before.

func refSkipsNothing(t *BlockTable, top, src int, align bool) bool {
	for g := range t.MambaT {
		if !t.MambaT[g].skipsNothing(top, src, align) {
			return false
		}
	}
	return true
}

func refCachesNoBlock(t *BlockTable, full, nHashes int) bool {
	for g := range t.MambaT {
		mt := &t.MambaT[g]
		if full > len(mt.Blocks) || full > nHashes {
			return false
		}
		for _, b := range mt.Blocks[min(mt.numCached, full):full] {
			if b != NullBlock {
				return false
			}
		}
	}
	return true
}

// refReadsRunning is the backend's restore test per group (align: a
// copy source other than the slot; all: the block holding token c−1).
func refReadsRunning(m *KVCacheManager, t *BlockTable, c int) bool {
	for g := range t.MambaT {
		mm, mt := m.mamba[g], &t.MambaT[g]
		src := int32(NullBlock)
		if mm.Spec.Mode == MambaAlign {
			src = mm.State(mt).CopySource
		} else if held := (c - 1) / mm.Spec.BlockSize; c > 0 && held < len(mt.Blocks) {
			src = mt.Blocks[held]
		}
		if c > 0 && src != NullBlock && src != t.Mamba[g] {
			return false
		}
	}
	return true
}

func refMambaNeed(m *KVCacheManager, t *BlockTable, numTokens, lookahead, computed, hitTokens int) int {
	need := 0
	for g, mm := range m.mamba {
		need += mm.BlocksToAllocate(&t.MambaT[g], mm.mainTokens(numTokens, lookahead), computed, m.mambaHit(g, hitTokens))
	}
	return need
}

func refMambaSteady(m *KVCacheManager, t *BlockTable, c, k int) int {
	if m.spec > 0 {
		return 0
	}
	spec := m.mamba[0].Spec
	b := spec.BlockSize
	cb := c / b
	if c == cb*b {
		return 0
	}
	for g := range m.mamba {
		mt := &t.MambaT[g]
		n := len(mt.Blocks)
		if !mt.running || n != cb+1 || mt.Blocks[n-1] != t.Mamba[g] || mt.numCached < cb || spec.Mode == MambaAlign && !mt.allocated {
			return 0
		}
	}
	return min(k, (cb+1)*b-c)
}

// lockstepError is how t's Mamba groups break lockstep, or what a
// shortcut left undone in some group, after AllocateSlots: every
// group's table has group 0's shape, every slot (and speculative column)
// is its group's running block (tail), and every real block the cached
// count covers is findable under its position's hash.
func lockstepError(m *KVCacheManager, t *BlockTable, hashes []BlockHash) string {
	want := shapeOf(&t.MambaT[0])
	for g := range t.MambaT {
		mt := &t.MambaT[g]
		if got := shapeOf(mt); got != want {
			return fmt.Sprintf("group %d's table has shape %+v, group 0's %+v", g, got, want)
		}
		if run := m.mamba[g].State(mt).Running; run != t.Mamba[g] {
			return fmt.Sprintf("group %d's slot is block %d, its running block %d", g, t.Mamba[g], run)
		}
		for j := 1; j <= m.spec && len(mt.Blocks) > m.spec; j++ {
			if b := mt.Blocks[len(mt.Blocks)-1-m.spec+j]; t.Spec[g*m.spec+j-1] != b {
				return fmt.Sprintf("group %d's speculative column %d is block %d, its table's %d", g, j, t.Spec[g*m.spec+j-1], b)
			}
		}
		for i, b := range mt.Blocks[:min(mt.numCached, len(mt.Blocks), len(hashes))] {
			if r := m.Pool.Record(b); b != NullBlock && (!r.Cached || r.Hash != hashes[i] || r.Group != m.mamba[g].Group) {
				return fmt.Sprintf("group %d's block %d at position %d, under its cached count %d, is not cached as its prefix: %+v", g, b, i, mt.numCached, r)
			}
		}
	}
	return ""
}

// The Mamba groups move in lockstep (mamba_modes_lockstep.go), and the
// shortcuts that read group 0 for all (RemoveSkippedBlocks, syncSlots,
// CacheBlocks, MambaSteady, MambaNeedsBlocks, MambaReadsRunning) answer
// as asking every group would. Random schedules of overlapping requests
// on a pool small enough to evict and preempt: chunked prefills (cut at
// block ends in align mode), decodes with K drafts and random
// acceptances, hits on three shared prompts, with and without the EAGLE
// drop, in all and align mode.
func TestMambaGroupsLockstep(t *testing.T) {
	sh, _ := model.Preset("tiny-hybrid") // 1 attention + 3 Mamba groups
	l := sh.Layout(16)
	bs := l.BlockSize
	for ci, o := range []ManagerOptions{
		{MambaCacheMode: MambaAll},
		{MambaCacheMode: MambaAll, FreeOrder: FreshToHead},
		{MambaCacheMode: MambaAlign},
		{MambaCacheMode: MambaAlign, FreeOrder: FreshToHead},
		{MambaCacheMode: MambaAlign, NumSpeculativeBlocks: 2, SpecSafeFree: true, UseEagle: true},
		{MambaCacheMode: MambaAlign, NumSpeculativeBlocks: 1, UseEagle: true, EagleMamba: EagleMambaNoMargin},
	} {
		o.EnablePrefixCaching = true
		m, err := NewKVCacheManagerWith(&l, 56, o)
		if err != nil {
			t.Fatal(err)
		}
		// ref allocates, caches and frees group by group (no lockstep
		// shortcuts) and takes the same calls: every table and the pool
		// must end each alike, to the block.
		ref, err := NewKVCacheManagerWith(&l, 56, o)
		if err != nil {
			t.Fatal(err)
		}
		ref.noLockstep = true
		k, align := o.NumSpeculativeBlocks, o.MambaCacheMode == MambaAlign
		rng := rand.New(rand.NewPCG(uint64(ci), 9))
		type req struct {
			id                  RequestID
			tb, rtb             BlockTable
			hashes              []BlockHash
			prompt, end, c, hit int
			preempted, started  bool
		}
		reqs := make([]req, 5)
		next := RequestID(1)
		renew := func(r *req) {
			*r = req{id: next, tb: r.tb, rtb: r.rtb, prompt: 2*bs + rng.IntN(4*bs)}
			if r.tb.MambaT == nil {
				r.tb, r.rtb = m.NewTable(), ref.NewTable()
			}
			next++
			r.end = r.prompt + 1 + rng.IntN(3*bs)
			r.hashes = tokenHashes(r.end+2*bs, bs, int32(rng.IntN(3))*1000) // three prompts: hits
		}
		for i := range reqs {
			renew(&reqs[i])
		}
		fail := func(r *req, what string, args ...any) {
			t.Helper()
			t.Fatalf("%+v, request %d at %d computed (prompt %d): %s", o, r.id, r.c, r.prompt, fmt.Sprintf(what, args...))
		}
		step := int64(1)
		var checks, hits, preempts, steady, restores, syncs, moves, counted, nothing, walks int
		for next < 300 {
			m.Pool.NewStepStarts(step)
			ref.Pool.NewStepStarts(step)
			step++
			for i := range reqs {
				r := &reqs[i]
				if !r.started {
					r.hit = m.GetComputedBlocks(&r.tb, r.hashes[:r.prompt/bs], r.prompt, r.preempted)
					if h := ref.GetComputedBlocks(&r.rtb, r.hashes[:r.prompt/bs], r.prompt, r.preempted); h != r.hit {
						fail(r, "a hit of %d tokens, %d allocating group by group", r.hit, h)
					}
					if r.hit > 0 {
						hits++
					}
				}
				c := r.c + r.hit
				q, drafts := 1, 0
				if c < r.prompt {
					q = min(r.prompt-c, 1+rng.IntN(3*bs))
					if align && c+q < r.prompt {
						q = max((c+q)/bs*bs-c, 0)
						if q == 0 {
							q = min(bs-c%bs, r.prompt-c)
						}
					}
				} else {
					drafts = k
				}
				computed, slot := r.c, r.tb.Mamba[0]
				top, src := m.mamba[0].Spec.skipBounds(c)
				if got, want := r.tb.MambaT[0].skipsNothing(top, src, align), refSkipsNothing(&r.tb, top, src, align); r.started && got != want {
					fail(r, "group 0 says RemoveSkippedBlocks frees nothing: %v, the groups: %v", got, want)
				}
				la := k // the drafter's lookahead slots
				numTokens := c + q + drafts + la
				if got, want := m.MambaNeedsBlocks(&r.tb, c+q+drafts), func() bool {
					for g := range r.tb.MambaT {
						if align && mambaCeilDiv(c+q+drafts, bs)+k > len(r.tb.MambaT[g].Blocks) {
							return true
						}
					}
					return false
				}(); got != want {
					fail(r, "MambaNeedsBlocks %v, the groups %v", got, want)
				}
				// AllocateSlotsLookahead's count, after the frees it starts
				// with (which a second call repeats as nothing).
				held := r.tb.MambaT[0].held
				if err := m.RemoveSkippedBlocks(r.id, &r.tb, computed+r.hit); err != nil {
					fail(r, "%v", err)
				}
				if held-r.tb.MambaT[0].held > 1 {
					walks++ // several blocks a group: all mode's walk behind a chunk
				}
				if err := ref.RemoveSkippedBlocks(r.id, &r.rtb, computed+r.hit); err != nil {
					fail(r, "%v", err)
				}
				if got, want := m.mambaNeed(&r.tb, numTokens, la, computed+r.hit, r.hit), refMambaNeed(m, &r.tb, numTokens, la, computed+r.hit, r.hit); got != want {
					fail(r, "the Mamba groups need %d blocks, asking each: %d", got, want)
				} else if r.hit == 0 && got > 0 {
					counted++
				}
				ok, err := m.AllocateSlotsLookahead(r.id, &r.tb, computed, r.hit, numTokens, la, c+q, r.hashes)
				if err != nil {
					fail(r, "%v", err)
				}
				rok, err := ref.AllocateSlotsLookahead(r.id, &r.rtb, computed, r.hit, numTokens, la, c+q, r.hashes)
				if err != nil {
					fail(r, "%v", err)
				}
				if e := twinError(m, ref, &r.tb, &r.rtb); ok != rok || e != "" {
					fail(r, "allocating %d tokens: %v, group by group %v; %s", numTokens, ok, rok, e)
				}
				if !ok || rng.IntN(100) == 0 { // preempted (short, or another request's need): back to the start, a hit again
					if err := m.Free(r.id, &r.tb); err != nil {
						fail(r, "%v", err)
					}
					if err := ref.Free(r.id, &r.rtb); err != nil {
						fail(r, "%v", err)
					}
					r.c, r.hit, r.started, r.preempted = 0, 0, false, true
					preempts++
					continue
				}
				if e := lockstepError(m, &r.tb, r.hashes); e != "" {
					fail(r, "after allocating %d tokens (hit %d): %s", numTokens, r.hit, e)
				}
				full := (c + q) / bs
				if got, want := r.tb.mambaCachesNoBlock(full+1, len(r.hashes)), refCachesNoBlock(&r.tb, full+1, len(r.hashes)); got != want {
					fail(r, "group 0 says the next boundary caches nothing: %v, the groups: %v", got, want)
				}
				for g, mm := range m.mamba {
					want, i := mm.CopySource(&r.tb.MambaT[g]), m.MambaCopySourceIndex(&r.tb)
					if got := int32(NullBlock); i >= 0 && r.tb.MambaT[g].Blocks[i] != want || i < 0 && want != got {
						fail(r, "group %d's copy source is block %d, MambaCopySourceIndex says position %d", g, want, i)
					}
				}
				if got, want := m.MambaReadsRunning(&r.tb, c), refReadsRunning(m, &r.tb, c); got != want {
					fail(r, "MambaReadsRunning %v, the groups %v", got, want)
				} else if !got {
					restores++
				}
				if slot != NullBlock && r.tb.Mamba[0] == slot {
					syncs++ // syncSlots' shortcut: no group's slot moved
				} else {
					moves++
				}
				checks++
				// The step runs: a decode accepts some of its drafts.
				r.started, r.hit = true, 0
				r.c = c + q
				if drafts > 0 {
					r.c += rng.IntN(drafts + 1)
				}
				// CacheSteady's test: where CachesNothing says so, the two
				// calls it stands for change nothing.
				if m.CachesNothing(&r.tb, r.c) {
					before := tableState(m, &r.tb)
					if err := m.RemoveSkippedBlocks(r.id, &r.tb, r.c); err != nil {
						fail(r, "%v", err)
					}
					if err := m.CacheBlocks(r.id, &r.tb, r.c, r.hashes); err != nil {
						fail(r, "%v", err)
					}
					if after := tableState(m, &r.tb); after != before {
						fail(r, "CachesNothing at %d tokens, but the calls changed\n%s\nto\n%s", r.c, before, after)
					}
					nothing++
				}
				if r.c >= r.prompt {
					if got, want := m.MambaSteady(&r.tb, r.c, bs), refMambaSteady(m, &r.tb, r.c, bs); got != want {
						fail(r, "MambaSteady %d, the groups %d", got, want)
					} else if got > 0 {
						steady++
					}
				}
				if r.c >= r.end {
					if err := m.Free(r.id, &r.tb); err != nil {
						fail(r, "%v", err)
					}
					if err := ref.Free(r.id, &r.rtb); err != nil {
						fail(r, "%v", err)
					}
					renew(r)
				}
			}
		}
		if checks < 1000 || hits < 50 || preempts < 50 || restores < 100 || syncs < 100 || moves < 100 || (k == 0 && steady < 100) || counted < 100 || (k == 0 && nothing < 100) || (!align && walks < 100) {
			t.Errorf("%+v: %d checks, %d hits, %d preemptions, %d restores, %d slots kept, %d moved, %d steady, %d counted without a hit, %d caching nothing, %d frees of several blocks a group: the schedule is too thin", o, checks, hits, preempts, restores, syncs, moves, steady, counted, nothing, walks)
		}
	}
}

// twinError is how a table of m and its twin of ref (allocating and
// freeing group by group) differ, in blocks, shape or the pools' free
// queues, or "".
func twinError(m, ref *KVCacheManager, t, rt *BlockTable) string {
	for g := range t.MambaT {
		if a, b := t.MambaT[g].Blocks, rt.MambaT[g].Blocks; fmt.Sprint(a) != fmt.Sprint(b) || shapeOf(&t.MambaT[g]) != shapeOf(&rt.MambaT[g]) {
			return fmt.Sprintf("Mamba group %d holds %v, group by group %v", g, a, b)
		}
	}
	for g := range t.Attn {
		if a, b := t.Attn[g], rt.Attn[g]; fmt.Sprint(a) != fmt.Sprint(b) {
			return fmt.Sprintf("attention group %d holds %v, group by group %v", g, a, b)
		}
	}
	if fmt.Sprint(t.Mamba) != fmt.Sprint(rt.Mamba) {
		return fmt.Sprintf("slots %v, group by group %v", t.Mamba, rt.Mamba)
	}
	if a, b := m.Pool.FreeQueue(), ref.Pool.FreeQueue(); fmt.Sprint(a) != fmt.Sprint(b) {
		return fmt.Sprintf("free queue %v, group by group %v", a, b)
	}
	return ""
}

// tableState spells out t's tables and m's free queue, for a before and
// after.
func tableState(m *KVCacheManager, t *BlockTable) string {
	var b strings.Builder
	for g := range t.MambaT {
		fmt.Fprintf(&b, "mamba %d: %v %+v\n", g, t.MambaT[g].Blocks, shapeOf(&t.MambaT[g]))
	}
	fmt.Fprintf(&b, "attention %v, cached %d, held %d, free %v", t.Attn, t.cachedBlocks, t.held, m.Pool.FreeQueue())
	return b.String()
}
