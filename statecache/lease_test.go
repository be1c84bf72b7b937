package statecache

import (
	"math/rand/v2"
	"testing"

	"statesim/model"
)

// twin is one request in both worlds of TestLeasesMatchPlainRecords.
type twin struct {
	id       RequestID
	fast     BlockTable
	plain    BlockTable
	computed int
	live     bool
}

// TestLeasesMatchPlainRecords drives two pools through the same random
// history of row accesses, clobbers, frees, preemptions, outside reads and
// copies-on-write (onto blocks no table holds, as the pool hands them out):
// one with the leased shortcuts (AccessKV, AdvanceState, LeaseState), one
// writing and re-reading every block's record every time. Every answer and
// every block's record must agree.
func TestLeasesMatchPlainRecords(t *testing.T) {
	sh, _ := model.Preset("tiny-hybrid") // 1 attention + 3 Mamba groups
	l := sh.Layout(16)
	bs := l.BlockSize
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		const nBlocks = 64
		mf, mp := NewKVCacheManager(&l, nBlocks), NewKVCacheManager(&l, nBlocks)
		pf, pp := NewProvenances(nBlocks), NewProvenances(nBlocks)
		var reqs []*twin
		for step := int64(0); step < 3000; step++ {
			switch op := rng.IntN(21); {
			case op < 2 || len(reqs) == 0:
				r := &twin{id: RequestID(len(reqs)), fast: mf.NewTable(), plain: mp.NewTable(), live: true}
				reqs = append(reqs, r)
			case op < 3:
				b := int32(1 + rng.IntN(nBlocks-1))
				pf.Clobber(b, b+1, 99, 5, step)
				pp.Clobber(b, b+1, 99, 5, step)
			case op < 4:
				b := int32(rng.IntN(nBlocks))
				if f, p := pf.Get(b), pp.Get(b); f != p {
					t.Fatalf("seed %d step %d: block %d reads %+v, plain %+v", seed, step, b, f, p)
				}
			case op == 20:
				src, dst := int32(rng.IntN(nBlocks)), int32(1+rng.IntN(nBlocks-1))
				if mf.Pool.Holder(dst) != NoRequest {
					continue
				}
				pf.CopyBlock(src, dst, step)
				pp.CopyBlock(src, dst, step)
			default:
				r := reqs[rng.IntN(len(reqs))]
				if !r.live {
					continue
				}
				if op < 5 { // finish or preempt
					if err := mf.Free(r.id, &r.fast); err != nil {
						t.Fatal(err)
					}
					if err := mp.Free(r.id, &r.plain); err != nil {
						t.Fatal(err)
					}
					r.computed, r.live = 0, op == 4 && rng.IntN(2) == 0
					continue
				}
				q := 1
				if rng.IntN(4) == 0 {
					q = 1 + rng.IntN(2*bs)
				}
				end := r.computed + q
				okf, err1 := mf.Allocate(r.id, &r.fast, end)
				okp, err2 := mp.Allocate(r.id, &r.plain, end)
				if err1 != nil || err2 != nil || okf != okp {
					t.Fatalf("allocate: %v %v %v %v", okf, okp, err1, err2)
				}
				if !okf {
					continue
				}
				for g := range r.fast.Attn {
					f := pf.AccessKV(&r.fast, g, r.id, r.computed, end, bs, step)
					p := plainAccessKV(pp, r.plain.Attn[g], r.id, r.computed, end, bs, step)
					if f != p {
						t.Fatalf("seed %d step %d: request %d KV read stale from %d, plain %d", seed, step, r.id, f, p)
					}
				}
				plainState(pp, &r.plain, r.id, r.computed, end, step)
				if _, ok := pf.AdvanceState(&r.fast, r.id, r.computed, end, step); !ok {
					pf.SettleState(&r.fast)
					if plainState(pf, &r.fast, r.id, r.computed, end, step) {
						pf.LeaseState(&r.fast, r.id, end, step, pf.Get(r.fast.Mamba[0]).Tainted)
					}
				}
				r.computed = end
			}
		}
		for b := int32(0); b < nBlocks; b++ {
			if f, p := pf.Get(b), pp.Get(b); f != p {
				t.Fatalf("seed %d end: block %d is %+v, plain %+v", seed, b, f, p)
			}
		}
	}
}

// plainAccessKV writes and re-reads every block, as before the shortcuts.
func plainAccessKV(ps *Provenances, blocks []int32, req RequestID, computed, end, bs int, step int64) int {
	last := (end - 1) / bs
	for bi := computed / bs; bi <= last; bi++ {
		ps.WriteKV(blocks[bi], req, max(0, computed-bi*bs), min(bs, end-bi*bs), step)
	}
	for bi := 0; bi <= last; bi++ {
		if !ps.KVValid(blocks[bi], req, min(bs, end-bi*bs)) {
			return bi
		}
	}
	return -1
}

// plainState reads and writes every slot; it reports whether all slots
// ended with the same taint (so the record can be leased).
func plainState(ps *Provenances, t *BlockTable, req RequestID, computed, end int, step int64) bool {
	n := 0
	for _, s := range t.Mamba {
		p := ps.Get(s)
		tainted := !ps.StateValid(s, req, computed) || p.Tainted
		if tainted {
			n++
		}
		ps.WriteState(s, req, end, step, tainted)
	}
	return n == 0 || n == len(t.Mamba)
}
