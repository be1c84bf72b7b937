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
	p := NewBlockPoolWith(1<<16, PoolOptions{})
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
// table (so probe runs collide and wrap) agree with a Go map, with two
// keys that share a tag (a match the head's record must refuse), and the
// runs stay in Robin Hood order. It runs a plain table and a runs table
// (runTag) whose keys' runs put them on two lines at the table's ends,
// several at one home.
func TestBlockTableMatchesMap(t *testing.T) {
	for _, c := range []struct {
		name   string
		blocks int
		runs   bool
	}{{"plain", 2, false}, {"runs", 8, true}} {
		t.Run(c.name, func(t *testing.T) { blockTableMatchesMap(t, c.blocks, c.runs) })
	}
}

func blockTableMatchesMap(t *testing.T, blocks int, runs bool) {
	const perKey = 8
	x := uint64(1)
	rnd := func(n int) int { x = mix(x + 0x9e3779b97f4a7c15); return int(x % uint64(n)) }
	tab := newBlockTable(blocks, 1, nil) // 16 or 64 slots for 11 distinct keys: long runs that wrap
	if tab.runs != runs {
		t.Fatalf("table of %d slots: runs %v, want %v", len(tab.slots), tab.runs, runs)
	}
	keys := make([]BlockKey, 12) // fewer keys than slots, as the pool guarantees
	for i := range keys {
		keys[i] = BlockKey{Hash: BlockHash(rnd(4)), Group: int32(rnd(3))}
		if i%3 == 0 {
			keys[i].Hash = BlockHash(mix(uint64(i)))
		}
		// A run, the hash's as keyAt's is, on the last line or the first
		// (top bits all ones or zeros), at one of three offsets.
		r := mix(uint64(keys[i].Hash))
		keys[i].run = -uint32(r&1)&^(runLen-1) | uint32(r>>1%3)
	}
	// keys[1] and keys[0]: products one apart, the same top 32 bits.
	const fib = 0x9e3779b97f4a7c15
	inv := uint64(fib)
	for range 6 {
		inv *= 2 - fib*inv // Newton: fib·inv ≡ 1 mod 2^64
	}
	keys[1] = BlockKey{Hash: BlockHash((uint64(keys[0].Hash)*fib + 1) * inv), Group: keys[0].Group, run: keys[0].run}
	if tab.tag(keys[0]) != tab.tag(keys[1]) || keys[0] == keys[1] {
		t.Fatalf("keys %v and %v: tags %#x and %#x", keys[0], keys[1], tab.tag(keys[0]), tab.tag(keys[1]))
	}
	// A key's heads come from its own range, their records naming it.
	rec := make([]kvCacheBlock, 1+perKey*len(keys))
	first := map[BlockKey]int{}
	for i, k := range keys {
		if _, ok := first[k]; !ok {
			first[k] = i
		}
		for j := range perKey {
			rec[1+perKey*first[k]+j] = kvCacheBlock{Hash: k.Hash, Group: k.Group}
		}
	}
	tab.rec, tab.at = rec, make([]uint32, len(rec))
	ref := map[BlockKey]int32{}
	for step := range 20000 {
		k := keys[rnd(len(keys))]
		switch rnd(3) {
		case 0:
			c := int32(1 + perKey*first[k] + rnd(perKey))
			tab.put(k, c)
			ref[k] = c
		case 1:
			tab.del(k)
			delete(ref, k)
		}
		for _, q := range keys {
			got := tab.lookup(q)
			if want := ref[q]; got != want {
				t.Fatalf("step %d, key %v: table %v, map %v", step, q, got, want)
			}
		}
		if tab.n != len(ref) {
			t.Fatalf("step %d: %d keys, map %d", step, tab.n, len(ref))
		}
		// at names each head's slot, and only heads have one.
		heads := 0
		for j, s := range tab.slots {
			if s.head != NullBlock && tab.at[s.head] != uint32(j+1) {
				t.Fatalf("step %d: slot %d headed by %d, at says %d", step, j, s.head, tab.at[s.head])
			}
		}
		for _, a := range tab.at {
			if a != 0 {
				heads++
			}
		}
		if heads != tab.n {
			t.Fatalf("step %d: %d blocks have a slot, %d keys", step, heads, tab.n)
		}
		// Robin Hood order: along a run the homes never go back, so an
		// entry past its home follows one at most one slot nearer its own.
		for j := range uint64(len(tab.slots)) {
			s, i := tab.slots[j], (j-1)&tab.mask
			if d := tab.dist(j, s.tag); s.head != NullBlock && d > 0 && (tab.slots[i].head == NullBlock || tab.dist(i, tab.slots[i].tag)+1 < d) {
				t.Fatalf("step %d: slot %d, %d past its home, follows slot %d %+v", step, j, d, i, tab.slots[i])
			}
		}
	}
}

// churn is Mooncake's shape on its pool (120,320 blocks): long prompts,
// a quarter of each shared with an earlier request of its family, the rest
// its own, a few requests in flight, so every step caches new blocks and
// evicts old ones across a table far larger than the CPU's caches.
type churn struct {
	m      *PrefixCacheManager
	live   []*vreq
	next   RequestID
	blocks int
}

func newChurn(tb testing.TB) *churn {
	const numBlocks, blocks, inFlight = 120320, 1024, 16
	w := &churn{m: hybridManager(tb, numBlocks, FreshToHead, HitGroup{FullAttention{16}, []int32{0}}), blocks: blocks}
	for range inFlight {
		r := &vreq{t: w.m.NewTable(), hashes: make([]BlockHash, 0, blocks)}
		r.t.Blocks[0] = make([]int32, 0, blocks)
		w.live = append(w.live, r)
	}
	return w
}

// request frees the oldest request in flight and admits a new one in
// chunks of 512 blocks, as a chunked prefill would.
func (w *churn) request(tb testing.TB) {
	r := w.live[0]
	copy(w.live, w.live[1:])
	w.live[len(w.live)-1] = r
	if err := w.m.Free(r.id, &r.t); err != nil {
		tb.Fatal(err)
	}
	r.id = w.next
	w.next++
	r.hashes = r.hashes[:0]
	parent := NoneHash
	for i := range w.blocks {
		id := uint64(r.id)<<20 | uint64(i)
		if i < w.blocks/4 {
			id = uint64(r.id%64)<<40 | uint64(i) // the family's shared prefix
		}
		parent = HashBlockContent(parent, id)
		r.hashes = append(r.hashes, parent)
	}
	n := w.blocks * 16
	hit := w.m.GetComputedBlocks(n, r.hashes, false)
	done := hit
	for first := true; done < n; first = false {
		chunk := min(n-done, 512*16)
		h := 0
		if first {
			h = hit
		}
		ok, err := w.m.AllocateSlots(r.id, &r.t, done-h, h, chunk, n, r.hashes)
		if err != nil || !ok {
			tb.Fatalf("request %d: ok %v err %v (free %d)", r.id, ok, err, w.m.Pool.NumFree())
		}
		done += chunk
	}
}

func BenchmarkPrefixCacheChurn(b *testing.B) {
	w := newChurn(b)
	for range 200 {
		w.request(b)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		w.request(b)
	}
	b.ReportMetric(float64(b.N*w.blocks)/b.Elapsed().Seconds(), "blocks/s")
}
