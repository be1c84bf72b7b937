package workload

import (
	"statesim/sim"
	"statesim/statecache"
)

// Content ids (statecache.Segment.ID, Arrival.OutputID) name runs of
// tokens. Each kind of content has its own salt, so ids of two kinds agree
// only by a 64-bit collision; within a kind sim.Mix is a bijection, so two
// indices never share an id. A trace's hash_ids ignore the seed: they name
// the trace's content, which every seed replays alike.
const (
	outputSalt = 0x6f7574707574 // a request's own tokens: prompt tail, then output
	promptSalt = 0x70726f6d7074 // a rollout prompt, shared by its rollouts
	userSalt   = 0x75736572     // one turn's new user text
	systemSalt = 0x73797374656d // the system prompt every session begins with
	hashSalt   = 0x68617368     // a trace's hash_ids
)

func contentID(salt, seed, n uint64) uint64 { return sim.Mix(sim.Mix(seed^salt) + n) }

// outputID is the content id of the n-th request's own tokens.
func outputID(seed uint64, n int) uint64 { return contentID(outputSalt, seed, uint64(n)) }

// slabChunk is how many segments one slab allocation holds.
const slabChunk = 4096

// segSlab hands out segment slices carved from shared chunks. A Prefix is
// never written again once returned (the engine reads it for the request's
// whole life), and a chunk is collected once no request holds any of it, so
// a long trace costs an allocation per chunk, not per request.
type segSlab struct{ buf []statecache.Segment }

// take returns n zero segments of capacity n (so appending copies).
func (s *segSlab) take(n int) []statecache.Segment {
	if n > cap(s.buf)-len(s.buf) {
		s.buf = make([]statecache.Segment, 0, max(slabChunk, n))
	}
	l := len(s.buf)
	s.buf = s.buf[:l+n]
	return s.buf[l : l+n : l+n]
}

// hashIDSegments turns a trace record's hash_ids into segments: id i names
// the record's prompt tokens [i·block, (i+1)·block), the last id the rest
// of its traceLen tokens, all cut at prompt tokens (a prompt_len drawn
// shorter than the trace's; past the trace's prompt a longer one is the
// request's own tail). nil when there are none.
func (s *segSlab) hashIDSegments(ids []uint64, block, traceLen, prompt int) []statecache.Segment {
	covered := min(traceLen, prompt)
	n := min(len(ids), (covered+block-1)/block)
	if n <= 0 {
		return nil
	}
	segs := s.take(n)
	for i := range segs {
		segs[i] = statecache.Segment{ID: contentID(hashSalt, 0, ids[i]), Tokens: int32(min(block, covered-i*block))}
	}
	return segs
}
