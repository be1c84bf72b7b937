package statecache

import "math"

// Segment is a run of prompt tokens whose content is named by ID: two
// requests whose prompts begin with the same segments (same IDs and
// lengths, in order) share those tokens. Token t of a segment is the same
// token wherever the segment appears, so a segment's first n tokens are
// also shared with a longer segment of the same ID.
type Segment struct {
	ID     uint64
	Tokens int32
}

// segmentMark starts every segment block's chain step, so a block named by
// pieces never hashes like one named by a single content id or by tokens.
const segmentMark = 0x5e65_6d65_6e74_0001

// pieceWord names one piece of a block: the mix of its segment's id
// (wordMix), its offset in the segment and its length. Offsets and lengths
// are below 2^31 (Segment.Tokens is an int32), so the two halves of the
// word are each exact.
func pieceWord(idMix uint64, off, n int) uint64 {
	return mix(idMix ^ (uint64(uint32(off))<<32 | uint64(uint32(n))))
}

// SegmentBlockHashes appends to hashes the chained hash of every full block
// of blockSize tokens of a sequence made of segs followed by tail tokens
// unique to `unique` (an id no other request uses). Block i covers tokens
// [i*bs, (i+1)*bs); its content is the list of (segment ID, offset in the
// segment, length) pieces that cover it, tail pieces using `unique` with
// the offset counted from the tail's first token, chained after block
// i-1's hash. So a block is shared only if it lies wholly inside the
// common prefix: a block that straddles the end of a shared segment and
// the start of a request's own tokens names a different piece.
//
// numTokens is the sequence length (prompt plus any output tokens known so
// far); only full blocks are hashed, and segments beyond numTokens are
// ignored. The tail is everything after the segments: the prompt's tokens
// past them, then the output. A request's `unique` is its OutputID
// (workload.Arrival), so a later request can name this one's tail as
// Segment{ID: OutputID, Tokens: tail length}, as a session's next turn does
// with the previous turn's output (whose prompt is all segments, so its
// tail is exactly its output).
//
// It is incremental: hashes already holding k blocks get blocks k..
// appended, the same values a single call would give. It allocates nothing
// beyond hashes' growth. Segments of zero or negative length are empty.
func SegmentBlockHashes(hashes []BlockHash, segs []Segment, unique uint64, numTokens, blockSize int) []BlockHash {
	if blockSize <= 0 {
		return hashes
	}
	parent := NoneHash
	if n := len(hashes); n > 0 {
		parent = hashes[n-1]
	}
	start := len(hashes) * blockSize
	if start+blockSize > numTokens {
		return hashes
	}
	// Find the segment holding token start: si and its first token segStart
	// (past the last segment: len(segs) and the tail's first token).
	si, segStart := 0, 0
	for si < len(segs) && segStart+segLen(segs[si]) <= start {
		segStart += segLen(segs[si])
		si++
	}
	// The chain through the blocks is sequential, so it takes one mix per
	// piece: a piece's own word (pieceWord) does not depend on the chain
	// and is mixed beside it. A segment's id is mixed once, and the blocks
	// wholly inside one piece (most of them) take a short path.
	for start+blockSize <= numTokens {
		for si < len(segs) && segLen(segs[si]) == 0 {
			si++
		}
		id, segEnd := unique, math.MaxInt // the tail has no end
		if si < len(segs) {
			id, segEnd = segs[si].ID, segStart+segLen(segs[si])
		}
		idMix := wordMix(id)
		for stop := min(segEnd, numTokens); start+blockSize <= stop; start += blockSize {
			parent = BlockHash(mix(uint64(parent) ^ segmentMark ^ pieceWord(idMix, start-segStart, blockSize)))
			hashes = append(hashes, parent)
		}
		if start == segEnd {
			segStart = segEnd
			si++
			continue
		}
		if start+blockSize > numTokens {
			break
		}
		// The block at start straddles the end of segment si: one piece
		// per segment it touches.
		end := start + blockSize
		h := uint64(parent) ^ segmentMark
		for pos := start; pos < end; {
			for si < len(segs) && segLen(segs[si]) == 0 {
				si++
			}
			id, segEnd := unique, end
			if si < len(segs) {
				id, segEnd = segs[si].ID, segStart+segLen(segs[si])
			}
			n := min(end, segEnd) - pos
			h = mix(h ^ pieceWord(wordMix(id), pos-segStart, n))
			pos += n
			if si < len(segs) && pos == segEnd {
				segStart = segEnd
				si++
			}
		}
		parent = BlockHash(h)
		hashes = append(hashes, parent)
		start = end
	}
	return hashes
}

func segLen(s Segment) int { return max(int(s.Tokens), 0) }

// SegmentTokens is the number of tokens segs cover.
func SegmentTokens(segs []Segment) int {
	n := 0
	for _, s := range segs {
		n += segLen(s)
	}
	return n
}
