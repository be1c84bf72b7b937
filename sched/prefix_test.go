package sched

import (
	"testing"

	"statesim/model"
	"statesim/statecache"
)

// newPrefixSched is newTestSched with prefix caching on: tiny-attention,
// block size 16, nBlocks blocks. Every request's first shared tokens are
// the same token ids (a system prompt); the rest are its own.
func newPrefixSched(t *testing.T, cfg Config, nBlocks, shared int) *Scheduler {
	t.Helper()
	sh, err := model.Preset("tiny-attention")
	if err != nil {
		t.Fatal(err)
	}
	l := sh.Layout(16)
	kv, err := statecache.NewKVCacheManagerWith(&l, nBlocks, statecache.ManagerOptions{EnablePrefixCaching: true})
	if err != nil {
		t.Fatal(err)
	}
	s := New(cfg, kv, Fixed, nil)
	s.HashBlocks = func(r *Request, bs int) {
		parent := statecache.NoneHash
		if n := len(r.BlockHashes); n > 0 {
			parent = r.BlockHashes[n-1]
		}
		for i := len(r.BlockHashes); (i+1)*bs <= r.NumTokens(); i++ {
			id := uint64(i)
			if (i+1)*bs > shared {
				id = uint64(r.ID+1)<<32 | uint64(i) // past the shared prefix: the request's own
			}
			parent = statecache.HashBlockContent(parent, id)
			r.BlockHashes = append(r.BlockHashes, parent)
		}
	}
	return s
}

// Two requests with the same 64-token prompt arrive together: the second
// hits the three blocks the first cached at allocation, in the same step
// (its fourth block is capped off: num_tokens − 1 = 63 tokens at most, so
// a full hit still computes a block's worth here). It starts at 48
// computed tokens and computes 16; queries count both prompts, hits 48.
func TestPrefixHitInSameStep(t *testing.T) {
	s := newPrefixSched(t, Config{MaxNumBatchedTokens: 1000, MaxNumSeqs: 8, MaxModelLen: 1000, EnableChunkedPrefill: true}, 64, 64)
	a := addReq(s, 0, 64, 1)
	b := addReq(s, 1, 64, 1)
	out, err := s.Schedule(0)
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, out, []rowWant{{0, 64, 0}, {1, 16, 48}})
	if b.NumComputedTokens != 64 || b.Blocks.HitBlocks() != 3 {
		t.Errorf("request 1: computed %d, hit blocks %d; want 64 and 3", b.NumComputedTokens, b.Blocks.HitBlocks())
	}
	for i := 0; i < 3; i++ {
		if a.Blocks.Attn[0][i] != b.Blocks.Attn[0][i] {
			t.Errorf("block %d: request 1 holds %d, request 0 %d: want the same block", i, b.Blocks.Attn[0][i], a.Blocks.Attn[0][i])
		}
	}
	if a.Blocks.Attn[0][3] == b.Blocks.Attn[0][3] {
		t.Errorf("the capped block %d is shared", a.Blocks.Attn[0][3])
	}
	st := s.KV.Pool.Stats()
	if st.Requests != 2 || st.Queries != 128 || st.Hits != 48 {
		t.Errorf("stats %+v: want 2 requests, 128 query tokens, 48 hit", st)
	}
	if held := s.KV.Pool.NumHeld(); held != 5 {
		t.Errorf("pool holds %d blocks, want 5 (4 + 1 new; 3 shared)", held)
	}
}

// After the first request finishes, its blocks stay cached in the free
// queue: a later request whose 65-token prompt shares all 64 of them hits
// 4 blocks (64 tokens, under the 64-token cap) and computes one token.
// A request back from preemption counts apart.
func TestPrefixHitAfterFreeAndPreemptedAccounting(t *testing.T) {
	s := newPrefixSched(t, Config{MaxNumBatchedTokens: 1000, MaxNumSeqs: 8, MaxModelLen: 1000, EnableChunkedPrefill: true}, 64, 64)
	addReq(s, 0, 64, 1)
	out, _ := s.Schedule(0)
	if fin, err := s.Update(out, 1); err != nil || len(fin) != 1 {
		t.Fatalf("finished %v, %v; want request 0", fin, err)
	}
	if s.KV.Pool.NumHeld() != 0 || s.KV.Pool.NumCachedBlocks() != 4 {
		t.Fatalf("held %d cached %d, want 0 and 4", s.KV.Pool.NumHeld(), s.KV.Pool.NumCachedBlocks())
	}
	c := addReq(s, 2, 65, 3)
	out, _ = s.Schedule(1)
	checkRows(t, out, []rowWant{{2, 1, 64}})
	st := s.KV.Pool.Stats()
	if st.Requests != 2 || st.Queries != 64+65 || st.Hits != 64 {
		t.Errorf("stats %+v: want 2 requests, 129 query tokens, 64 hit", st)
	}
	// Preempt it: its blocks (all cached now: the fifth holds 1 token, not
	// full) go back; back in the waiting queue it hits its own 4 blocks
	// again, counted as preempted.
	s.Update(out, 2)
	if err := s.Preempt(c, out); err != nil {
		t.Fatal(err)
	}
	out, _ = s.Schedule(2)
	checkRows(t, out, []rowWant{{2, 2, 64}})
	st = s.KV.Pool.Stats()
	if st.PreemptedRequests != 1 || st.PreemptedQueries != 66 || st.PreemptedHits != 64 || st.Requests != 2 {
		t.Errorf("stats %+v: want one preempted lookup of 66 tokens hitting 64, the others unchanged", st)
	}
}

// Without prefix caching nothing is looked up and nothing is shared.
func TestNoPrefixCachingNoHit(t *testing.T) {
	s := newTestSched(t, Config{MaxNumBatchedTokens: 1000, MaxNumSeqs: 8, MaxModelLen: 1000, EnableChunkedPrefill: true}, Fixed, 64)
	addReq(s, 0, 64, 1)
	addReq(s, 1, 64, 1)
	out, _ := s.Schedule(0)
	checkRows(t, out, []rowWant{{0, 64, 0}, {1, 64, 0}})
	if st := s.KV.Pool.Stats(); st != (statecache.PrefixCacheStats{}) {
		t.Errorf("stats %+v without prefix caching", st)
	}
}
