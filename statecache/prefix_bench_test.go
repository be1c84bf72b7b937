package statecache

import (
	"testing"
)

// rollouts is a GRPO-like load on a prefix-caching pool: rounds of
// prompts, each shared by several rollouts with their own completions, so
// the pool keeps hitting the prompt, caching completions, and evicting.
type rollouts struct {
	m       *PrefixCacheManager
	reqs    []*vreq
	tokens  []int32
	round   int
	next    RequestID
	prompt  int // tokens
	out     int // tokens per rollout
	perTurn int // rollouts per prompt
}

func newRollouts(tb testing.TB, numBlocks, prompts, perPrompt, prompt, out int) *rollouts {
	m := hybridManager(tb, numBlocks, FreshToHead, HitGroup{FullAttention{16}, []int32{0}})
	w := &rollouts{m: m, prompt: prompt, out: out, perTurn: perPrompt}
	for range prompts * perPrompt {
		r := &vreq{t: m.NewTable(), tokens: make([]int32, 0, prompt+out), hashes: make([]BlockHash, 0, (prompt+out)/16+1)}
		// Room for the longest table, so that steady state allocates nothing.
		r.t.Blocks[0] = make([]int32, 0, (prompt+out)/16+1)
		w.reqs = append(w.reqs, r)
	}
	return w
}

// runRound admits every rollout of a round (prompt, then its whole
// completion as one chunk), then frees them all.
func (w *rollouts) runRound(tb testing.TB) {
	w.round++
	for i, r := range w.reqs {
		p := i / w.perTurn
		r.id = w.next
		w.next++
		r.tokens = r.tokens[:0]
		for j := range w.prompt {
			r.tokens = append(r.tokens, int32(p*100000+j%97)) // prompt p, the same every round
		}
		for j := range w.out {
			r.tokens = append(r.tokens, int32(w.round*1000+i*10+j%7))
		}
		r.hashes = AppendBlockHashes(r.hashes[:0], r.tokens, 16)
		hit := w.m.GetComputedBlocks(len(r.tokens), r.hashes, false)
		ok, err := w.m.AllocateSlots(r.id, &r.t, 0, hit, len(r.tokens)-hit, len(r.tokens), r.hashes)
		if err != nil || !ok {
			tb.Fatalf("round %d request %d: ok %v err %v (free %d)", w.round, i, ok, err, w.m.Pool.NumFree())
		}
	}
	for _, r := range w.reqs {
		if err := w.m.Free(r.id, &r.t); err != nil {
			tb.Fatal(err)
		}
	}
}

// TestPrefixCacheAllocationFree: once warm, a round of lookups,
// allocations, caching and frees allocates nothing, and the pool's
// bookkeeping stays bounded by the pool (the table never holds more keys
// than blocks).
func TestPrefixCacheAllocationFree(t *testing.T) {
	w := newRollouts(t, 2048, 4, 8, 512, 256)
	for range 50 {
		w.runRound(t)
	}
	if a := testing.AllocsPerRun(50, func() { w.runRound(t) }); a != 0 {
		t.Errorf("%.1f allocations per round", a)
	}
	p := w.m.Pool
	if keys := p.pc.table.n; keys > p.NumCachedBlocks() || p.NumCachedBlocks() >= p.NumBlocks() {
		t.Errorf("%d keys, %d cached blocks, %d blocks", keys, p.NumCachedBlocks(), p.NumBlocks())
	}
	s := p.Stats()
	// Every rollout but the very first of each prompt hits the prompt's
	// 32 blocks; round 1's first rollouts miss.
	if s.Hits < s.Queries/3 || s.Evictions == 0 {
		t.Errorf("stats %+v: the load should hit the prompts and evict completions", s)
	}
	t.Logf("stats after %d rounds: %+v", w.round, s)
}

func BenchmarkPrefixCacheRollouts(b *testing.B) {
	w := newRollouts(b, 2048, 4, 8, 512, 256)
	w.runRound(b)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		w.runRound(b)
	}
	b.ReportMetric(float64(b.N*len(w.reqs))/b.Elapsed().Seconds(), "requests/s")
}

// BenchmarkPoolPopPush is the no-prefix-caching path every current run
// takes: pop a table's worth of blocks, free them reversed.
func BenchmarkPoolPopPush(b *testing.B) {
	p := NewBlockPool(1 << 16)
	held := make([]int32, 64)
	b.ReportAllocs()
	for range b.N {
		for i := range held {
			held[i], _ = p.Pop(1)
		}
		for i := len(held) - 1; i >= 0; i-- {
			if err := p.Push(1, held[i]); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// TestBlockTableMatchesMap: random puts, deletes and lookups on a small
// table (so probe runs collide and wrap) agree with a Go map.
func TestBlockTableMatchesMap(t *testing.T) {
	tab := newBlockTable(6) // 16 slots
	ref := map[BlockKey]dupChain{}
	x := uint64(1)
	rnd := func(n int) int { x = mix(x + 0x9e3779b97f4a7c15); return int(x % uint64(n)) }
	keys := make([]BlockKey, 12) // fewer keys than slots, as the pool guarantees
	for i := range keys {
		keys[i] = BlockKey{BlockHash(rnd(4)), int32(rnd(3))}
		if i%3 == 0 {
			keys[i].Hash = BlockHash(mix(uint64(i)))
		}
	}
	for step := range 20000 {
		k := keys[rnd(len(keys))]
		switch rnd(3) {
		case 0:
			c := dupChain{int32(1 + rnd(100)), int32(rnd(100))}
			tab.put(k, c)
			ref[k] = c
		case 1:
			tab.del(k)
			delete(ref, k)
		}
		for _, q := range keys {
			got, ok := tab.get(q)
			want, wok := ref[q]
			if ok != wok || got != want {
				t.Fatalf("step %d, key %v: table %v %v, map %v %v", step, q, got, ok, want, wok)
			}
		}
		if tab.n != len(ref) {
			t.Fatalf("step %d: %d keys, map %d", step, tab.n, len(ref))
		}
	}
}
