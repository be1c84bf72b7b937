package statecache

import (
	"math/rand/v2"
	"testing"
)

// label is what a token is under the segment model: which content (segment
// or tail id) and where in it.
type label struct {
	id  uint64
	off int
}

// labels spells a segment sequence out token by token, the naive way the
// hash must agree with.
func labels(segs []Segment, unique uint64, n int) []label {
	var out []label
	for _, s := range segs {
		for i := 0; i < int(s.Tokens) && len(out) < n; i++ {
			out = append(out, label{s.ID, i})
		}
	}
	for i := 0; len(out) < n; i++ {
		out = append(out, label{unique, i})
	}
	return out
}

func sameLabels(a, b []label) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// randomSegs draws segments from a small id alphabet, with shared leading
// runs likely, so equal and unequal prefixes both occur.
func randomSegs(r *rand.Rand, base []Segment) []Segment {
	var segs []Segment
	keep := r.IntN(len(base) + 1)
	segs = append(segs, base[:keep]...)
	for n := r.IntN(4); n > 0; n-- {
		segs = append(segs, Segment{ID: uint64(r.IntN(3)), Tokens: int32(r.IntN(40))})
	}
	return segs
}

// Block i of two sequences has the same hash exactly when their first
// (i+1)·bs tokens carry the same labels: a shared block lies wholly inside
// the common prefix.
func TestSegmentBlockHashesShareExactlyTheCommonPrefix(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	base := []Segment{{ID: 7, Tokens: 33}, {ID: 8, Tokens: 5}, {ID: 9, Tokens: 64}}
	shared, differ := 0, 0
	for trial := 0; trial < 3000; trial++ {
		bs := 1 + r.IntN(20)
		a, b := randomSegs(r, base), randomSegs(r, base)
		ua, ub := uint64(100+r.IntN(2)), uint64(100+r.IntN(2))
		na, nb := r.IntN(160), r.IntN(160)
		ha := SegmentBlockHashes(nil, a, ua, na, bs)
		hb := SegmentBlockHashes(nil, b, ub, nb, bs)
		if len(ha) != na/bs || len(hb) != nb/bs {
			t.Fatalf("%d and %d blocks for %d and %d tokens of %d", len(ha), len(hb), na, nb, bs)
		}
		la, lb := labels(a, ua, na), labels(b, ub, nb)
		for i := 0; i < min(len(ha), len(hb)); i++ {
			want := sameLabels(la[:(i+1)*bs], lb[:(i+1)*bs])
			if got := ha[i] == hb[i]; got != want {
				t.Fatalf("trial %d: block %d (bs %d) of %v+%d and %v+%d: same hash %v, same tokens %v", trial, i, bs, a, ua, b, ub, got, want)
			}
			if want {
				shared++
			} else {
				differ++
			}
		}
	}
	if shared < 1000 || differ < 1000 {
		t.Fatalf("weak test: %d shared and %d differing block pairs", shared, differ)
	}
}

// Hashing as tokens arrive (a few at a time) gives the blocks one call
// over the whole sequence gives.
func TestSegmentBlockHashesIncremental(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	base := []Segment{{ID: 1, Tokens: 70}, {ID: 0, Tokens: 0}, {ID: 2, Tokens: 3}}
	for trial := 0; trial < 500; trial++ {
		bs := 1 + r.IntN(16)
		segs := randomSegs(r, base)
		n := r.IntN(300)
		whole := SegmentBlockHashes(nil, segs, 5, n, bs)
		var inc []BlockHash
		for k := 0; k <= n; k += 1 + r.IntN(2*bs) {
			inc = SegmentBlockHashes(inc, segs, 5, k, bs)
		}
		inc = SegmentBlockHashes(inc, segs, 5, n, bs)
		if len(inc) != len(whole) {
			t.Fatalf("trial %d: %d blocks incrementally, %d at once", trial, len(inc), len(whole))
		}
		for i := range whole {
			if inc[i] != whole[i] {
				t.Fatalf("trial %d: block %d differs", trial, i)
			}
		}
	}
}

// A session's next turn names the previous turn's output by its OutputID:
// every full block of the previous turn's sequence (prompt + output) is a
// block of the next turn's.
func TestSegmentBlockHashesNextTurnSharesPreviousOutput(t *testing.T) {
	const bs = 16
	turn1 := []Segment{{ID: 11, Tokens: 100}}
	const out1, out1Len = 0xabc, 37
	h1 := SegmentBlockHashes(nil, turn1, out1, 100+out1Len, bs)
	turn2 := append(append([]Segment{}, turn1...), Segment{ID: out1, Tokens: out1Len}, Segment{ID: 12, Tokens: 50})
	h2 := SegmentBlockHashes(nil, turn2, 0xdef, 187, bs)
	for i := range h1 {
		if h1[i] != h2[i] {
			t.Fatalf("block %d of turn 1 not shared by turn 2", i)
		}
	}
	if len(h1) != (100+out1Len)/bs || h2[len(h1)] == h1[len(h1)-1] {
		t.Fatalf("turn 1 has %d blocks", len(h1))
	}
}

// Segment hashes never equal token or content-id hashes of the same parent.
func TestSegmentBlockHashesOwnNamespace(t *testing.T) {
	seg := SegmentBlockHashes(nil, []Segment{{ID: 3, Tokens: 4}}, 9, 4, 4)[0]
	if seg == HashBlockContent(NoneHash, 3) || seg == HashBlockTokens(NoneHash, []int32{0, 1, 2, 3}) {
		t.Fatal("segment hash collides with another kind")
	}
}

func TestSegmentBlockHashesNoAllocation(t *testing.T) {
	segs := []Segment{{ID: 1, Tokens: 1000}, {ID: 2, Tokens: 517}}
	buf := make([]BlockHash, 0, 256)
	if a := testing.AllocsPerRun(100, func() { buf = SegmentBlockHashes(buf[:0], segs, 3, 4000, 16) }); a != 0 {
		t.Fatalf("%v allocations per call", a)
	}
	if len(buf) != 250 {
		t.Fatalf("%d blocks, want 250", len(buf))
	}
}

func TestSegmentTokens(t *testing.T) {
	if n := SegmentTokens([]Segment{{1, 5}, {2, -3}, {3, 7}}); n != 12 {
		t.Fatalf("SegmentTokens = %d, want 12", n)
	}
}

// plainSegmentHashes is SegmentBlockHashes' definition written out with
// nothing cached: each block chains its pieces (id, offset, length), one
// mix per piece, after the segment mark. The values name blocks in traces
// and in violations, so the fast path must give exactly these.
func plainSegmentHashes(segs []Segment, unique uint64, numTokens, bs int) []BlockHash {
	var out []BlockHash
	parent := NoneHash
	for end := bs; end <= numTokens; end += bs {
		h := uint64(parent) ^ segmentMark
		for pos := end - bs; pos < end; {
			// The piece holding pos: a segment's, or the tail's.
			id, segStart, segEnd := unique, SegmentTokens(segs), end
			start := 0
			for _, s := range segs {
				if l := segLen(s); pos < start+l {
					id, segStart, segEnd = s.ID, start, start+l
					break
				} else {
					start += l
				}
			}
			n := min(end, segEnd) - pos
			h = mix(h ^ mix(wordMix(id)^(uint64(pos-segStart)<<32|uint64(n))))
			pos += n
		}
		parent = BlockHash(h)
		out = append(out, parent)
	}
	return out
}

func TestSegmentBlockHashesMatchTheirDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	base := []Segment{{7, 40}, {8, 0}, {9, 33}}
	for range 300 {
		segs := randomSegs(r, base)
		n, bs := r.IntN(200), 1+r.IntN(20)
		got := SegmentBlockHashes(nil, segs, 99, n, bs)
		want := plainSegmentHashes(segs, 99, n, bs)
		if len(got) != len(want) {
			t.Fatalf("segs %v, %d tokens, block %d: %d hashes, want %d", segs, n, bs, len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("segs %v, %d tokens, block %d: block %d hash %#x, want %#x", segs, n, bs, i, got[i], want[i])
			}
		}
	}
	// HashBlockContent chains the content mark and the id's mix in one mix.
	if got, want := HashBlockContent(5, 6), BlockHash(mix(5^wordMix(^uint64(0))^wordMix(6))); got != want {
		t.Errorf("HashBlockContent(5, 6) = %#x, want %#x", got, want)
	}
}
