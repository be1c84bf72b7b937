package cuda

import (
	"fmt"

	"statesim/backend/mock"
	"statesim/sched"
	"statesim/statecache"
)

// inflight is what the GPU engine produced for one request still in
// flight. req is valid only while it is: engines recycle finished requests.
type inflight struct {
	req *sched.Request
	mock.Generated
}

// packing is what batch packing needs to know about the model and pool.
type packing struct {
	vocab, blockSize, numBlocks int
	mambaGroups, attnGroups     int
}

// batch is one step's rows packed for the kernels, on the host: the
// flattened tokens and the index arrays that vLLM's metadata builders
// hand the Mamba and attention kernels. Arrays per group are group-major
// ([group][row]), so a layer passes its group's slice by offset.
type batch struct {
	rows int
	// qsl is query_start_loc: row i's tokens are [qsl[i], qsl[i+1]).
	qsl     []int32
	hasInit []int32 // has_initial_state per row
	// dRows and pRows are the decode and prefill rows' batch indices.
	dRows, pRows []int32
	// tokens are the step's token ids, with each one's row and position.
	tokens, tokRow, tokPos []int32
	cacheIdx               []int32 // [mamba group][row] state slot
	// dTok and dSlot are the decode rows' token index and state slot
	// ([mamba group][decode row]), which the state-update kernels take.
	dTok, dSlot []int32
	maxBlocks   int     // block-table width
	blockTables []int32 // [attn group][row][maxBlocks]
	slotMapping []int64 // [attn group][token] KV slot
	samples     []sample
}

// sample is one row that produces a token this step.
type sample struct {
	rd   *inflight
	tok  int // batch token index whose logits are needed
	pos  int // the position of the token sampled (c+q)
	step int64
}

func (bt *batch) numTokens() int { return len(bt.tokens) }

// pack builds the step's batch from the scheduled rows (in batch order,
// NumComputed as the model runner sees it), adding requests seen for the
// first time to reqs. It checks what a kernel would otherwise turn into
// an out-of-bounds access: positions past the known tokens, decode rows of
// more than one token, slots and blocks outside the pool.
func (p *packing) pack(out *sched.Output, reqs map[statecache.RequestID]*inflight) (*batch, error) {
	nr, nm := len(out.Rows), p.mambaGroups
	bt := &batch{rows: nr, qsl: make([]int32, nr+1), hasInit: make([]int32, nr), cacheIdx: make([]int32, nm*nr), maxBlocks: 1}
	for i := range out.Rows {
		row := &out.Rows[i]
		r := row.Req
		rd := reqs[r.ID]
		if rd == nil {
			rd = &inflight{req: r, Generated: mock.Generated{Seed: r.Seed, Prompt: r.NumPromptTokens}}
			reqs[r.ID] = rd
		}
		if len(rd.Tokens) != r.NumOutputTokens || rd.Prompt != r.NumPromptTokens {
			return nil, fmt.Errorf("request %d: engine holds %d+%d tokens, the backend %d+%d", r.ID, r.NumPromptTokens, r.NumOutputTokens, rd.Prompt, len(rd.Tokens))
		}
		c, q := row.NumComputed, row.NumScheduled
		if q <= 0 || c+q > r.NumTokens() {
			return nil, fmt.Errorf("request %d: scheduled positions [%d, %d) outside the %d known tokens", r.ID, c, c+q, r.NumTokens())
		}
		bt.qsl[i] = int32(len(bt.tokens))
		for pos := c; pos < c+q; pos++ {
			bt.tokens = append(bt.tokens, rd.TokenAt(pos, p.vocab))
			bt.tokRow = append(bt.tokRow, int32(i))
			bt.tokPos = append(bt.tokPos, int32(pos))
		}
		if row.HasInitialState {
			bt.hasInit[i] = 1
		}
		if row.Path == sched.PathDecode {
			if q != 1 {
				return nil, fmt.Errorf("request %d: %d tokens on the decode path", r.ID, q)
			}
			bt.dRows = append(bt.dRows, int32(i))
		} else {
			bt.pRows = append(bt.pRows, int32(i))
		}
		if nm > 0 && len(r.Blocks.Mamba) != nm {
			return nil, fmt.Errorf("request %d holds %d state slots for %d Mamba groups", r.ID, len(r.Blocks.Mamba), nm)
		}
		for g, slot := range r.Blocks.Mamba {
			if slot <= statecache.NullBlock || int(slot) >= p.numBlocks {
				return nil, fmt.Errorf("request %d: state slot %d outside the pool of %d", r.ID, slot, p.numBlocks)
			}
			bt.cacheIdx[g*nr+i] = slot
		}
		bt.maxBlocks = max(bt.maxBlocks, ceilDiv(c+q, p.blockSize))
		if r.Status == sched.Running && c+q >= r.NumTokens() {
			bt.samples = append(bt.samples, sample{rd: rd, tok: len(bt.tokens) - 1, pos: c + q, step: out.Step})
		}
	}
	bt.qsl[nr] = int32(len(bt.tokens))
	bt.packDecode(nm)
	if err := bt.packAttention(out, p); err != nil {
		return nil, err
	}
	return bt, nil
}

// packDecode gives the decode kernels each decode row's token and slots.
func (bt *batch) packDecode(nm int) {
	nd := len(bt.dRows)
	bt.dTok = make([]int32, nd)
	bt.dSlot = make([]int32, nm*nd)
	for k, i := range bt.dRows {
		bt.dTok[k] = bt.qsl[i]
		for g := 0; g < nm; g++ {
			bt.dSlot[g*nd+k] = bt.cacheIdx[g*bt.rows+int(i)]
		}
	}
}

// packAttention builds the block tables and slot mappings of every
// attention group (vLLM's block_table and slot_mapping).
func (bt *batch) packAttention(out *sched.Output, p *packing) error {
	na, nr, T, bs := p.attnGroups, bt.rows, len(bt.tokens), p.blockSize
	bt.blockTables = make([]int32, na*nr*bt.maxBlocks)
	bt.slotMapping = make([]int64, na*T)
	for i := range out.Rows {
		r := out.Rows[i].Req
		if len(r.Blocks.Attn) != na {
			return fmt.Errorf("request %d holds %d attention block tables for %d groups", r.ID, len(r.Blocks.Attn), na)
		}
		end := out.Rows[i].NumComputed + out.Rows[i].NumScheduled
		need := ceilDiv(end, bs)
		for g, blocks := range r.Blocks.Attn {
			if len(blocks) < need {
				return fmt.Errorf("request %d: %d positions need %d attention blocks, the table holds %d", r.ID, end, need, len(blocks))
			}
			for j, blk := range blocks[:need] {
				if blk <= statecache.NullBlock || int(blk) >= p.numBlocks {
					return fmt.Errorf("request %d: attention block %d outside the pool of %d", r.ID, blk, p.numBlocks)
				}
				bt.blockTables[(g*nr+i)*bt.maxBlocks+j] = blk
			}
		}
	}
	for t := 0; t < T; t++ {
		blocks, pos := out.Rows[bt.tokRow[t]].Req.Blocks.Attn, int(bt.tokPos[t])
		for g := range blocks {
			bt.slotMapping[g*T+t] = int64(blocks[g][pos/bs])*int64(bs) + int64(pos%bs)
		}
	}
	return nil
}

// record samples each sampled row's token from its log-probs (row i's
// vocab-sized slice of logp) as the mock does, and appends it to the
// request. Sampling is shift-invariant, so log-probs stand in for logits.
func record(samples []sample, logp []float32, vocab int, temperature float64) {
	for i, sp := range samples {
		lp := logp[i*vocab : (i+1)*vocab]
		tok := mock.Sample(lp, temperature, sp.rd.Seed, sp.pos)
		sp.rd.Tokens = append(sp.rd.Tokens, tok)
		sp.rd.LogProbs = append(sp.rd.LogProbs, float64(lp[tok]))
		sp.rd.Steps = append(sp.rd.Steps, sp.step)
	}
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
