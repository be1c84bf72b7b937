package workload

import (
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"

	"statesim/sim"
	"statesim/statecache"
	"statesim/trace"
)

const mooncakeSample = "../trace/testdata/mooncake_sample.jsonl"

func mooncake(prompt Dist) *Spec {
	return &Spec{Kind: "trace", Path: mooncakeSample, Format: "mooncake", PromptLen: prompt, OutputLen: Dist{Kind: "trace"}}
}

func drainSeed(t *testing.T, s *Spec, seed uint64) []Arrival {
	t.Helper()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	src, err := New(s, sim.NewStreams(seed), "")
	if err != nil {
		t.Fatal(err)
	}
	var out []Arrival
	for {
		a, ok, err := src.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return out
		}
		out = append(out, a)
	}
}

// hashes is the request's block hashes over its prompt and output.
func hashes(a Arrival, bs int) []statecache.BlockHash {
	return statecache.SegmentBlockHashes(nil, a.Prefix, a.OutputID, a.PromptLen+a.OutputLen, bs)
}

func commonBlocks(a, b []statecache.BlockHash) int {
	n := 0
	for n < min(len(a), len(b)) && a[n] == b[n] {
		n++
	}
	return n
}

// The sample's hash_ids become one segment per id, 512 tokens each but the
// last (input_length − 512·(n−1)); equal leading ids are equal segments.
func TestMooncakeHashIDsBecomeSegments(t *testing.T) {
	got := drainSeed(t, mooncake(Dist{Kind: "trace"}), 1)
	ids := [][2]int{{0, 13}, {0, 33}, {40, 53}, {60, 60}, {61, 62}}
	for i, a := range got {
		if len(a.Prefix) != ids[i][1]-ids[i][0]+1 || statecache.SegmentTokens(a.Prefix) != a.PromptLen {
			t.Fatalf("arrival %d: %d segments of %d tokens for a %d-token prompt", i, len(a.Prefix), statecache.SegmentTokens(a.Prefix), a.PromptLen)
		}
		for k, s := range a.Prefix {
			want := int32(512)
			if k == len(a.Prefix)-1 {
				want = int32(a.PromptLen - 512*k)
			}
			if s.Tokens != want || s.ID != contentID(hashSalt, 0, uint64(ids[i][0]+k)) {
				t.Fatalf("arrival %d segment %d: %+v", i, k, s)
			}
		}
	}
	if got[0].Prefix[12] != got[1].Prefix[12] || got[0].Prefix[0] == got[2].Prefix[0] {
		t.Fatal("equal ids, unequal segments (or the reverse)")
	}
	// With 16-token blocks, arrival 1 holds all of arrival 0's prompt
	// (ids 0..13 again, the last partial: 6955 tokens, 434 full blocks);
	// arrival 2 shares nothing.
	h0, h1, h2 := hashes(got[0], 16), hashes(got[1], 16), hashes(got[2], 16)
	if n := commonBlocks(h0, h1); n != 6955/16 {
		t.Fatalf("arrivals 0 and 1 share %d blocks, want %d", n, 6955/16)
	}
	if n := commonBlocks(h0, h2); n != 0 {
		t.Fatalf("arrivals 0 and 2 share %d blocks", n)
	}
	// 176-token blocks (the hybrid page) straddle ids: block 37 covers
	// tokens 6512..6687, across ids 12 and 13 and past arrival 0's prompt.
	if n := commonBlocks(hashes(got[0], 176), hashes(got[1], 176)); n != 6955/176 {
		t.Fatalf("176-token blocks: %d shared, want %d", n, 6955/176)
	}
}

// The ids name the trace's content: every seed gives the same segments,
// and each request's own id differs from every other's.
func TestPrefixDeterministic(t *testing.T) {
	a, b, c := drainSeed(t, mooncake(Dist{Kind: "trace"}), 1), drainSeed(t, mooncake(Dist{Kind: "trace"}), 1), drainSeed(t, mooncake(Dist{Kind: "trace"}), 2)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed, different arrivals")
	}
	seen := map[uint64]bool{}
	for i := range a {
		if !reflect.DeepEqual(a[i].Prefix, c[i].Prefix) {
			t.Fatalf("arrival %d: the trace's segments depend on the seed", i)
		}
		if a[i].OutputID == c[i].OutputID || seen[a[i].OutputID] {
			t.Fatalf("arrival %d: output id %x not unique", i, a[i].OutputID)
		}
		seen[a[i].OutputID] = true
	}
}

// A drawn prompt_len cuts the trace's segments; past the trace's prompt
// the tokens are the request's own.
func TestMooncakeSegmentsCutAtDrawnPrompt(t *testing.T) {
	short := drainSeed(t, mooncake(Dist{Kind: "constant", Value: 1000}), 1)
	if p := short[0].Prefix; len(p) != 2 || p[0].Tokens != 512 || p[1].Tokens != 488 {
		t.Fatalf("1000-token prompt: %+v", p)
	}
	long := drainSeed(t, mooncake(Dist{Kind: "constant", Value: 9000}), 1)
	if p := long[0].Prefix; len(p) != 14 || statecache.SegmentTokens(p) != 6955 {
		t.Fatalf("9000-token prompt over a 6955-token record: %d segments, %d tokens", len(p), statecache.SegmentTokens(p))
	}
}

// A trace without hash ids, and every other kind but rollouts and
// sessions, names no shared prefix.
func TestNoPrefixWithoutSharing(t *testing.T) {
	for _, s := range []*Spec{
		{Kind: "trace", Path: "../scenarios/traces/AzureLLMInferenceTrace_conv.csv", Limit: 50, PromptLen: Dist{Kind: "trace"}, OutputLen: Dist{Kind: "trace"}},
		{Kind: "batches", NumPrompts: 10, BatchSize: 10, PromptLen: Dist{Kind: "constant", Value: 9}, OutputLen: Dist{Kind: "constant", Value: 3}},
		{Kind: "poisson", Rate: 1, Count: 10, PromptLen: Dist{Kind: "constant", Value: 9}, OutputLen: Dist{Kind: "constant", Value: 3}},
		synth(10, 0),
	} {
		seen := map[uint64]bool{}
		for _, a := range drainSeed(t, s, 1) {
			if a.Prefix != nil || seen[a.OutputID] {
				t.Fatalf("%s: arrival %+v", s.Kind, a)
			}
			seen[a.OutputID] = true
		}
	}
}

// All rollouts of a prompt share the whole prompt, one segment; rollouts
// of different prompts share nothing.
func TestRolloutsSharePrompt(t *testing.T) {
	s := &Spec{Kind: "rollouts", Prompts: 3, RolloutsPerPrompt: 4, Steps: 1,
		PromptLen: Dist{Kind: "uniform", Min: 20, Max: 200}, OutputLen: Dist{Kind: "uniform", Min: 1, Max: 50}}
	got := drainSeed(t, s, 7)
	if len(got) != 12 {
		t.Fatalf("%d rollouts", len(got))
	}
	for i, a := range got {
		lead := got[i/4*4]
		if len(a.Prefix) != 1 || a.Prefix[0].Tokens != int32(a.PromptLen) || a.Prefix[0] != lead.Prefix[0] || a.PromptLen != lead.PromptLen {
			t.Fatalf("rollout %d: prefix %+v, prompt %d; its prompt's first: %+v", i, a.Prefix, a.PromptLen, lead.Prefix)
		}
		h, hl := hashes(a, 16), hashes(lead, 16)
		if n := commonBlocks(h, hl); i%4 != 0 && n != a.PromptLen/16 {
			t.Fatalf("rollout %d shares %d blocks with its prompt's first, want %d", i, n, a.PromptLen/16)
		}
		if i >= 4 && commonBlocks(h, hashes(got[0], 16)) != 0 {
			t.Fatalf("rollout %d shares blocks with another prompt's", i)
		}
	}
	if again := drainSeed(t, s, 7); !reflect.DeepEqual(again, got) {
		t.Fatal("same seed, different rollouts")
	}
}

// serve drives a closed-loop source the way the engine does: each request
// runs for its prompt + output tokens × 1 ms after it arrives, finishes are
// reported in time order, and arrivals must come in time order.
func serve(t *testing.T, src Source, seen func(a Arrival, finish sim.Time)) {
	t.Helper()
	type running struct {
		a      Arrival
		finish sim.Time
	}
	var inFlight []running
	var last sim.Time
	for n := 0; ; n++ {
		for {
			a, ok, err := src.Next()
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			if a.At < last {
				t.Fatalf("arrival at %v after one at %v", a.At, last)
			}
			last = a.At
			r := running{a, a.At + sim.Time(a.PromptLen+a.OutputLen)*sim.Millisecond}
			seen(a, r.finish)
			inFlight = append(inFlight, r)
		}
		if len(inFlight) == 0 {
			if !src.Done() {
				t.Fatal("source waits with nothing in flight")
			}
			return
		}
		i := 0
		for j := range inFlight {
			if inFlight[j].finish < inFlight[i].finish {
				i = j
			}
		}
		r := inFlight[i]
		inFlight = slices.Delete(inFlight, i, i+1)
		src.Finished(r.a.Group, r.finish)
	}
}

func sessionsSpec() *Spec {
	return &Spec{Kind: "sessions", Sessions: 5, TurnsPerSession: 4, ThinkTimeS: 2, SystemPromptTokens: 100,
		PromptLen: Dist{Kind: "uniform", Min: 1, Max: 60}, OutputLen: Dist{Kind: "uniform", Min: 1, Max: 40}}
}

// Each turn's prompt is the previous prompt + the previous output + new
// user text, arriving think time after the previous turn finished; its
// prefix names the previous turn's output by that turn's OutputID, so
// every full block of the previous turn's sequence is a block of this one.
func TestSessionsGrowByThePreviousOutput(t *testing.T) {
	s := sessionsSpec()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	src, err := New(s, sim.NewStreams(3), "")
	if err != nil {
		t.Fatal(err)
	}
	if src.Total() != 20 {
		t.Fatalf("Total %d", src.Total())
	}
	type turn struct {
		a      Arrival
		finish sim.Time
	}
	last := map[int]turn{}
	turns, firsts := 0, 0
	serve(t, src, func(a Arrival, finish sim.Time) {
		turns++
		if statecache.SegmentTokens(a.Prefix) != a.PromptLen || a.Prefix[0].Tokens != 100 {
			t.Fatalf("turn %+v: prefix covers %d of %d tokens", a, statecache.SegmentTokens(a.Prefix), a.PromptLen)
		}
		prev, ok := last[a.Group]
		if !ok {
			firsts++
			if a.At != 0 || len(a.Prefix) != 2 {
				t.Fatalf("first turn %+v", a)
			}
		} else {
			user := int(a.Prefix[len(a.Prefix)-1].Tokens)
			if a.At != prev.finish+2*sim.Second || a.PromptLen != prev.a.PromptLen+prev.a.OutputLen+user {
				t.Fatalf("turn at %v of %d tokens after one finishing at %v of %d+%d", a.At, a.PromptLen, prev.finish, prev.a.PromptLen, prev.a.OutputLen)
			}
			n := len(prev.a.Prefix)
			if !slices.Equal(a.Prefix[:n], prev.a.Prefix) || a.Prefix[n] != (statecache.Segment{ID: prev.a.OutputID, Tokens: int32(prev.a.OutputLen)}) || len(a.Prefix) != n+2 {
				t.Fatalf("turn prefix %+v after %+v (output %x)", a.Prefix, prev.a.Prefix, prev.a.OutputID)
			}
			for _, bs := range []int{1, 16, 176} {
				hp := hashes(prev.a, bs)
				if commonBlocks(hp, hashes(a, bs)) != len(hp) {
					t.Fatalf("block size %d: the next turn shares %d of the previous turn's %d blocks", bs, commonBlocks(hp, hashes(a, bs)), len(hp))
				}
			}
		}
		last[a.Group] = turn{a, finish}
	})
	if turns != 20 || firsts != 5 {
		t.Fatalf("%d turns, %d sessions", turns, firsts)
	}
	// Sessions share the system prompt's blocks and nothing more.
	h0, h1 := hashes(last[0].a, 16), hashes(last[1].a, 16)
	if n := commonBlocks(h0, h1); n != 100/16 {
		t.Fatalf("two sessions share %d blocks, want the system prompt's %d", n, 100/16)
	}
}

func TestSessionsDeterministic(t *testing.T) {
	run := func(seed uint64) []Arrival {
		src, err := New(sessionsSpec(), sim.NewStreams(seed), "")
		if err != nil {
			t.Fatal(err)
		}
		var out []Arrival
		serve(t, src, func(a Arrival, _ sim.Time) { out = append(out, a) })
		return out
	}
	a, b, c := run(9), run(9), run(10)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed, different sessions")
	}
	if reflect.DeepEqual(a, c) {
		t.Fatal("seeds 9 and 10 gave the same sessions")
	}
}

// A stray or repeated Finished does not release a turn early.
func TestSessionsIgnoreStrayFinished(t *testing.T) {
	src, _ := New(&Spec{Kind: "sessions", Sessions: 1, TurnsPerSession: 3, PromptLen: Dist{Kind: "constant", Value: 4}, OutputLen: Dist{Kind: "constant", Value: 2}}, sim.NewStreams(1), "")
	if _, ok, _ := src.Next(); !ok {
		t.Fatal("no first turn")
	}
	src.Finished(5, 0)
	src.Finished(-1, 0)
	src.Finished(0, sim.Second)
	src.Finished(0, sim.Second)
	a, ok, _ := src.Next()
	if !ok || a.PromptLen != 10 || a.At != sim.Second {
		t.Fatalf("second turn %+v", a)
	}
	if _, ok, _ := src.Next(); ok || src.Done() {
		t.Fatal("a third turn before the second finished")
	}
}

func TestSessionsValidate(t *testing.T) {
	d := Dist{Kind: "constant", Value: 1}
	for _, c := range []struct {
		spec Spec
		want string
	}{
		{Spec{Kind: "sessions", TurnsPerSession: 2, PromptLen: d, OutputLen: d}, "sessions: must be >= 1"},
		{Spec{Kind: "sessions", Sessions: 2, PromptLen: d, OutputLen: d}, "turns_per_session: must be >= 1"},
		{Spec{Kind: "sessions", Sessions: MaxGroup + 1, TurnsPerSession: 1, PromptLen: d, OutputLen: d}, "sessions: 1048577 is more than"},
		{Spec{Kind: "sessions", Sessions: MaxGroup, TurnsPerSession: 1025, PromptLen: d, OutputLen: d}, "turns_per_session: sessions × turns_per_session"},
		{Spec{Kind: "sessions", Sessions: 1, TurnsPerSession: 1, ThinkTimeS: -1, PromptLen: d, OutputLen: d}, "think_time_s: must be"},
		{Spec{Kind: "sessions", Sessions: 1, TurnsPerSession: 1e6, ThinkTimeS: 1e6, PromptLen: d, OutputLen: d}, "think_time_s: 1e+06 s × 1000000 turns"},
		{Spec{Kind: "sessions", Sessions: 1, TurnsPerSession: 1, SystemPromptTokens: -1, PromptLen: d, OutputLen: d}, "system_prompt_tokens: must be in"},
		{Spec{Kind: "sessions", Sessions: 1, TurnsPerSession: 1, PromptLen: Dist{Kind: "trace"}, OutputLen: d}, "prompt_len.dist"},
		{Spec{Kind: "trace", Path: "x.jsonl", HashBlockTokens: -1}, "hash_block_tokens: must be in"},
	} {
		if err := c.spec.Validate(); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %s...", c.spec, err, c.want)
		}
	}
	s := Spec{Kind: "sessions", Sessions: 3, TurnsPerSession: 4, SystemPromptTokens: 10, PromptLen: Dist{Kind: "uniform", Min: 1, Max: 50}, OutputLen: d}
	if m := s.MaxSequence(); m != 10+4*51 {
		t.Fatalf("MaxSequence %d, want %d", m, 10+4*51)
	}
}

// The slab hands out disjoint slices that appending never overwrites.
func TestSegSlabDisjoint(t *testing.T) {
	var s segSlab
	var all [][]statecache.Segment
	for i := 0; i < 3*slabChunk/7; i++ {
		p := s.take(7)
		for k := range p {
			p[k].ID = uint64(i)
		}
		_ = append(p, statecache.Segment{ID: 1 << 60})
		all = append(all, p)
	}
	for i, p := range all {
		for _, x := range p {
			if x.ID != uint64(i) {
				t.Fatalf("slice %d overwritten: %+v", i, p)
			}
		}
	}
}

// Over Mooncake's whole trace, the prompt tokens an unbounded cache of
// 16-token blocks would hit (blocks whose hash an earlier request made,
// capped at prompt − 1 as vLLM's lookup is) equal what the raw hash_ids
// say: the longest run of leading ids some earlier record began with,
// times 512, within the prompt. One derivation goes through the segments'
// block hashes, the other reads the trace's ids into a trie.
func TestMooncakeTraceSharingMatchesHashIDs(t *testing.T) {
	const bs, maxPrompt = 16, 131072
	path := "../scenarios/traces/mooncake_synthetic_trace.jsonl"
	s := &Spec{Kind: "trace", Path: path, Format: "mooncake", PromptLen: Dist{Kind: "trace"}, OutputLen: Dist{Kind: "trace"}}
	seen := map[statecache.BlockHash]bool{}
	var fromHashes, total int
	for _, a := range drainSeed(t, s, 1) {
		if a.PromptLen >= maxPrompt {
			continue
		}
		total += a.PromptLen
		hs := hashes(a, bs)
		hit := 0
		for hit < len(hs) && seen[hs[hit]] {
			hit++
		}
		fromHashes += min(hit*bs, (a.PromptLen-1)/bs*bs)
		for _, h := range hs {
			seen[h] = true
		}
	}

	r, c, err := trace.Open(path, trace.Options{Format: "mooncake"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	type edge struct {
		node int
		id   uint64
	}
	trie := map[edge]int{}
	fromIDs := 0
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if rec.PromptTokens >= maxPrompt {
			continue
		}
		node, k := 0, 0
		for _, id := range r.(trace.HashIDReader).HashIDs() {
			next, ok := trie[edge{node, id}]
			if !ok {
				next = len(trie) + 1
				trie[edge{node, id}] = next
			} else {
				k++ // a new node has no children: only the leading run counts
			}
			node = next
		}
		fromIDs += min(k*512, rec.PromptTokens-1) / bs * bs
	}
	if fromHashes != fromIDs || fromHashes == 0 || fromHashes >= total {
		t.Fatalf("shared prompt tokens: %d from block hashes, %d from hash_ids, of %d", fromHashes, fromIDs, total)
	}
	t.Logf("an unbounded cache would hit %d of %d prompt tokens (%.1f%%)", fromHashes, total, 100*float64(fromHashes)/float64(total))
}
