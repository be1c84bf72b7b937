package statecache

import (
	"fmt"
	"testing"
)

// checkPrefixInvariants is what must hold between any two operations of a
// prefix-caching pool and its manager's tables:
//   - a block has no reference exactly when it is queued (the null block
//     never is), and queued + held = usable blocks;
//   - every reference is a table entry: Σ refs = Σ table lengths, per block;
//   - a block is findable exactly when its record says cached and it is
//     not a private tail's (unlisted), under its record's key, and the
//     table counts one key per chain;
//   - every cached block in a table sits at the position its hash names.
func checkPrefixInvariants(p *BlockPool, tables []*PrefixTable, hashes [][]BlockHash) error {
	inQueue := make([]bool, p.NumBlocks())
	for _, b := range p.FreeQueue() {
		if inQueue[b] {
			return fmt.Errorf("block %d queued twice", b)
		}
		inQueue[b] = true
	}
	if inQueue[NullBlock] {
		return fmt.Errorf("the null block is queued")
	}
	if p.NumHeld()+p.NumFree() != p.NumBlocks()-1 {
		return fmt.Errorf("%d held + %d free of %d", p.NumHeld(), p.NumFree(), p.NumBlocks()-1)
	}
	uses := make([]int, p.NumBlocks())
	for ti, t := range tables {
		for g, bs := range t.Blocks {
			for i, b := range bs {
				if b == NullBlock {
					continue
				}
				uses[b]++
				if r := p.Record(b); r.Cached && i < t.numCached[g] && r.Hash != hashes[ti][i] {
					return fmt.Errorf("table %d group %d position %d: block %d cached as %#x, position hashes to %#x", ti, g, i, b, uint64(r.Hash), uint64(hashes[ti][i]))
				}
			}
		}
	}
	keys := map[BlockKey]bool{}
	cached := 0
	for b := int32(1); int(b) < p.NumBlocks(); b++ {
		ref := p.RefCount(b)
		if (ref == 0) != inQueue[b] {
			return fmt.Errorf("block %d: ref %d, queued %v", b, ref, inQueue[b])
		}
		if ref != uses[b] {
			return fmt.Errorf("block %d: ref %d, in %d tables", b, ref, uses[b])
		}
		r := p.Record(b)
		k := p.pc.keyOf(b)
		found := false
		if head := p.pc.table.lookup(k); head != NullBlock {
			tail := head
			for x := head; x != noBlock; x = p.pc.rec[x].dupNext {
				found = found || x == b
				tail = x
			}
			if p.pc.rec[head].dupPrev != tail {
				return fmt.Errorf("key %v: chain from %d ends at %d, its head says %d", k, head, tail, p.pc.rec[head].dupPrev)
			}
		}
		// A private tail's block is cached out of the table (unlisted).
		listed := r.Cached && !p.pc.st[b].unlisted
		if found != listed {
			return fmt.Errorf("block %d: record cached %v (unlisted %v), in its key's chain %v", b, r.Cached, p.pc.st[b].unlisted, found)
		}
		// The table's slot index names the entry of each chain's head, and
		// only a head's.
		if a := p.pc.table.at[b]; found && b == p.pc.table.lookup(k) {
			if a == 0 || p.pc.table.slots[a-1].head != b {
				return fmt.Errorf("block %d heads key %v's chain, its slot index says %d", b, k, a)
			}
		} else if a != 0 {
			return fmt.Errorf("block %d heads no chain, its slot index says %d", b, a)
		}
		if r.Cached {
			cached++
		}
		if listed {
			keys[k] = true
		}
	}
	if cached != p.NumCachedBlocks() || len(keys) != p.pc.table.n {
		return fmt.Errorf("%d cached blocks under %d keys; pool says %d and %d", cached, len(keys), p.NumCachedBlocks(), p.pc.table.n)
	}
	return nil
}

// TestPrefixCacheInvariantsUnderRandomLoad drives the manager with
// requests drawn from a few shared prefixes (admitted whole or in chunks,
// freed in random order, with an occasional reset) and checks the
// invariants after every operation, in both free orders.
func TestPrefixCacheInvariantsUnderRandomLoad(t *testing.T) {
	for _, order := range []FreeOrder{FreeToTail, FreshToHead} {
		for _, rules := range [][]HitGroup{
			{{FullAttention{4}, []int32{0}}},
			{{FullAttention{4}, []int32{0}}, {SlidingWindow{4, 9}, []int32{1}}},
		} {
			m := hybridManager(t, 40, order, rules...)
			x := uint64(11)
			rnd := func(n int) int { x = mix(x + 0x9e3779b97f4a7c15); return int(x % uint64(n)) }
			const slots = 6
			reqs := make([]*vreq, slots)
			done := make([]int, slots) // tokens allocated so far
			var hits, fails, resets, dups int
			id := RequestID(0)
			for op := range 3000 {
				i := rnd(slots)
				r := reqs[i]
				switch {
				case r == nil: // admit a new request: a shared prefix, then its own tokens
					n := 4 + rnd(40)
					prefix := rnd(3)
					toks := make([]int32, n)
					for j := range toks {
						toks[j] = int32(prefix*1000 + j)
						if j >= 4*(1+prefix) {
							toks[j] = int32(int(id)*1000 + j)
						}
					}
					r = newVreq(m, id, toks)
					id++
					hit := m.GetComputedBlocks(len(toks), r.hashes, false)
					chunk := len(toks) - hit
					if rnd(2) == 0 {
						chunk = 1 + rnd(chunk)
					}
					ok, err := m.AllocateSlots(r.id, &r.t, 0, hit, chunk, len(toks), r.hashes)
					if err != nil {
						t.Fatal(err)
					}
					if !ok {
						fails++
						break
					}
					if hit > 0 {
						hits++
					}
					reqs[i], done[i] = r, hit+chunk
				case done[i] < len(r.tokens) && rnd(2) == 0: // its next chunk
					chunk := 1 + rnd(len(r.tokens)-done[i])
					ok, err := m.AllocateSlots(r.id, &r.t, done[i], 0, chunk, len(r.tokens), r.hashes)
					if err != nil {
						t.Fatal(err)
					}
					if ok {
						done[i] += chunk
					} else {
						fails++
					}
				default:
					if err := m.Free(r.id, &r.t); err != nil {
						t.Fatal(err)
					}
					reqs[i] = nil
				}
				if rnd(200) == 0 && m.Pool.NumHeld() == 0 && m.Pool.ResetPrefixCache() {
					resets++
				}
				var tabs []*PrefixTable
				var hs [][]BlockHash
				for _, r := range reqs {
					if r != nil {
						tabs, hs = append(tabs, &r.t), append(hs, r.hashes)
					}
				}
				if err := checkPrefixInvariants(m.Pool, tabs, hs); err != nil {
					t.Fatalf("%s, %d rules, op %d: %v", order, len(rules), op, err)
				}
				for b := range m.Pool.pc.rec {
					if r := &m.Pool.pc.rec[b]; m.Pool.pc.st[b].cached && r.dupNext != noBlock {
						dups++ // a key cached twice: its evictions unlink from a chain
					}
				}
			}
			if hits == 0 || fails == 0 || m.Pool.Stats().Evictions == 0 || dups == 0 {
				t.Errorf("%s, %d rules: the load missed a path: %d hits, %d failed allocations, %d evictions, %d duplicate keys",
					order, len(rules), hits, fails, m.Pool.Stats().Evictions, dups)
			}
			t.Logf("%s, %d rules: %d hits, %d failed allocations, %d resets, stats %+v", order, len(rules), hits, fails, resets, m.Pool.Stats())
		}
	}
}
