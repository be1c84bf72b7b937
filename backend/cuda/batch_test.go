package cuda

import (
	"slices"
	"strings"
	"testing"

	"statesim/backend/mock"
	"statesim/sched"
	"statesim/statecache"
)

// A pool of 20 blocks of 4 tokens, two Mamba groups and one attention group.
var testPacking = packing{vocab: 100, blockSize: 4, numBlocks: 20, mambaGroups: 2, attnGroups: 1}

// twoRows is a step of a decode row (request 7: prompt 5, one token
// generated, computing position 5) and a whole-prompt prefill (request 9:
// prompt 6), both running, so both sample.
func twoRows() (*sched.Output, map[statecache.RequestID]*inflight) {
	a := &sched.Request{ID: 7, NumPromptTokens: 5, NumOutputTokens: 1, NumComputedTokens: 5, Status: sched.Running, Seed: 11,
		Blocks: statecache.BlockTable{Mamba: []int32{3, 4}, Attn: [][]int32{{5, 6}}}}
	b := &sched.Request{ID: 9, NumPromptTokens: 6, Status: sched.Running, Seed: 13,
		Blocks: statecache.BlockTable{Mamba: []int32{8, 9}, Attn: [][]int32{{10, 11}}}}
	out := &sched.Output{Step: 4, NumDecodes: 1, Rows: []sched.Row{
		{Req: a, NumComputed: 5, NumScheduled: 1, Path: sched.PathDecode, HasInitialState: true},
		{Req: b, NumComputed: 0, NumScheduled: 6, Path: sched.PathPrefill},
	}}
	reqs := map[statecache.RequestID]*inflight{
		7: {req: a, Generated: mock.Generated{Seed: 11, Prompt: 5, Tokens: []int32{42}, LogProbs: []float64{-1}, Steps: []int64{3}}},
	}
	return out, reqs
}

func TestPackLaysOutTheKernelsArrays(t *testing.T) {
	out, reqs := twoRows()
	bt, err := testPacking.pack(out, reqs)
	if err != nil {
		t.Fatal(err)
	}
	eq := func(name string, got, want []int32) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	eq("query_start_loc", bt.qsl, []int32{0, 1, 7})
	eq("has_initial_state", bt.hasInit, []int32{1, 0})
	eq("decode rows", bt.dRows, []int32{0})
	eq("prefill rows", bt.pRows, []int32{1})
	// Request 7's position 5 is its generated token; request 9's are its
	// prompt's.
	want := []int32{42}
	for p := 0; p < 6; p++ {
		want = append(want, mock.PromptToken(13, p, testPacking.vocab))
	}
	eq("tokens", bt.tokens, want)
	eq("token rows", bt.tokRow, []int32{0, 1, 1, 1, 1, 1, 1})
	eq("token positions", bt.tokPos, []int32{5, 0, 1, 2, 3, 4, 5})
	eq("state slots [group][row]", bt.cacheIdx, []int32{3, 8, 4, 9})
	eq("decode tokens", bt.dTok, []int32{0})
	eq("decode slots [group][decode row]", bt.dSlot, []int32{3, 4})
	if bt.maxBlocks != 2 {
		t.Errorf("block-table width %d, want 2 (6 positions in blocks of 4)", bt.maxBlocks)
	}
	eq("block tables", bt.blockTables, []int32{5, 6, 10, 11})
	// slot = block × block_size + position % block_size.
	if got, want := bt.slotMapping, []int64{6*4 + 1, 40, 41, 42, 43, 44, 45}; !slices.Equal(got, want) {
		t.Errorf("slot mapping = %v, want %v", got, want)
	}
	if len(bt.samples) != 2 || bt.samples[0].tok != 0 || bt.samples[1].tok != 6 || bt.samples[0].pos != 6 || bt.samples[1].pos != 6 {
		t.Errorf("samples %+v: want the last token of each row (0 and 6), both sampling position 6", bt.samples)
	}
	if rd := reqs[9]; rd == nil || rd.req != out.Rows[1].Req || rd.Prompt != 6 || rd.Seed != 13 {
		t.Errorf("request 9 not added in flight with its request, prompt and seed: %+v", rd)
	}
}

func TestPackRejectsWhatAKernelWouldOverrun(t *testing.T) {
	for _, c := range []struct {
		name  string
		spoil func(out *sched.Output)
		want  string
	}{
		{"two tokens on the decode path", func(out *sched.Output) { out.Rows[0].NumScheduled, out.Rows[0].NumComputed = 2, 4 }, "decode path"},
		{"positions past the known tokens", func(out *sched.Output) { out.Rows[1].NumScheduled = 7 }, "outside the 6 known tokens"},
		{"the null block as a state slot", func(out *sched.Output) { out.Rows[1].Req.Blocks.Mamba[1] = 0 }, "state slot 0 outside the pool"},
		{"a state slot past the pool", func(out *sched.Output) { out.Rows[0].Req.Blocks.Mamba[0] = 20 }, "state slot 20 outside the pool"},
		{"a short block table", func(out *sched.Output) { out.Rows[1].Req.Blocks.Attn[0] = []int32{10} }, "need 2 attention blocks, the table holds 1"},
		{"an attention block past the pool", func(out *sched.Output) { out.Rows[1].Req.Blocks.Attn[0][1] = 25 }, "attention block 25 outside the pool"},
		{"a missing Mamba group", func(out *sched.Output) { out.Rows[0].Req.Blocks.Mamba = []int32{3} }, "1 state slots for 2 Mamba groups"},
	} {
		out, reqs := twoRows()
		c.spoil(out)
		if _, err := testPacking.pack(out, reqs); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one mentioning %q", c.name, err, c.want)
		}
	}
	// A backend that lost track of a request's tokens says so.
	out, reqs := twoRows()
	reqs[7].Tokens = nil
	if _, err := testPacking.pack(out, reqs); err == nil || !strings.Contains(err.Error(), "engine holds 5+1 tokens, the backend 5+0") {
		t.Errorf("token count mismatch: error %v", err)
	}
}

func TestRecordSamplesGreedilyFromLogProbs(t *testing.T) {
	rd := &inflight{Generated: mock.Generated{Seed: 1, Prompt: 3}}
	logp := []float32{-3, -0.5, -2, -9, -9, -0.25} // two rows of vocab 3
	record([]sample{{rd: rd, pos: 3, step: 5}, {rd: rd, pos: 4, step: 5}}, logp, 3, 0)
	if !slices.Equal(rd.Tokens, []int32{1, 2}) || !slices.Equal(rd.LogProbs, []float64{-0.5, -0.25}) || !slices.Equal(rd.Steps, []int64{5, 5}) {
		t.Errorf("recorded tokens %v, log-probs %v, steps %v; want the argmax of each row: [1 2], [-0.5 -0.25], [5 5]", rd.Tokens, rd.LogProbs, rd.Steps)
	}
}
