// A gopter commands test of align mode's per-request block lifecycle:
// random schedules (chunks cut by sched.AlignMambaChunk), step ends,
// frees (finish or preemption) and prefix hits of three requests sharing
// one prompt, run against the real manager and against a plain model of
// the rules (positions only: the running block at cdiv(tokens, B) − 1,
// the previous running block or a hit kept one step as the copy source,
// states cached where a step ends on a boundary). After every command the
// two agree, a request holds at most 2 + K blocks (K = 0), the copy
// source is the previous running block (or the hit) and is freed exactly
// at the request's next schedule, a restore goes into a fresh block, and
// the pool's references match the tables.
package statecache_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/commands"
	"github.com/leanovate/gopter/gen"

	"statesim/sched"
	"statesim/statecache"
)

const (
	alB       = 4  // block size
	alPrompt  = 38 // every request's prompt: the last boundary is 36
	alMax     = 64 // tokens at which a request must be freed
	alReqs    = 3
	alBlocks  = 2048 // large enough that no cached state is ever evicted
	alMaxHits = (alPrompt - 1) / alB
)

type alReq struct {
	computed       int
	running        bool
	runPos, srcPos int // -1: none
	srcIsHit       bool
	lastStep       int64
}

type alModel struct {
	step   int64
	reqs   [alReqs]alReq
	cached [alMax / alB]int64 // step a position's state was first cached; 0: never
	// expectations for the last command
	ran                     bool
	hitPos                  int
	wantRunPos, wantSrcPos  int
	wantSrcIsHit, wantFresh bool
	freedSrc                bool
}

func (m *alModel) clone() *alModel { c := *m; return &c }

func (m *alModel) String() string { return fmt.Sprintf("align model at step %d: %+v", m.step, m.reqs) }

// hit is the model's lookup for a new request: the last cached boundary
// at most prompt−1 tokens in (no eviction: the pool never runs short).
func (m *alModel) hit() int {
	for i := alMaxHits - 1; i >= 0; i-- {
		if m.cached[i] != 0 {
			return i
		}
	}
	return -1
}

type alSUT struct {
	pool     *statecache.BlockPool
	mgr      *statecache.MambaManager
	tables   [alReqs]statecache.MambaTable
	computed [alReqs]int // the scheduler's num_computed_tokens
	hashes   []statecache.BlockHash
	dst      [][]int32
}

type alResult struct {
	ran           bool
	hitBlock      int32
	before, after statecache.MambaState
	beforeTable   []int32
	srcRefsBefore int
	srcRefsAfter  int
	pool          string // a pool/table disagreement, "" when none
}

// consistency: every real block's reference count is the number of
// tables holding it, and those are all the held blocks.
func (s *alSUT) consistency() string {
	count := map[int32]int{}
	for i := range s.tables {
		for _, b := range s.tables[i].Blocks {
			if b != statecache.NullBlock {
				count[b]++
			}
		}
		if st := s.mgr.State(&s.tables[i]); st.Held > 2 {
			return fmt.Sprintf("request %d holds %d blocks, more than 2 + K", i, st.Held)
		}
	}
	if len(count) != s.pool.NumHeld() {
		return fmt.Sprintf("%d distinct blocks in tables, pool holds %d", len(count), s.pool.NumHeld())
	}
	for b, n := range count {
		if s.pool.RefCount(b) != n {
			return fmt.Sprintf("block %d in %d tables, %d references", b, n, s.pool.RefCount(b))
		}
	}
	return ""
}

func alSchedule(r, draw int) commands.Command {
	id := statecache.RequestID(r)
	return &commands.ProtoCommand{
		Name: fmt.Sprintf("schedule(req %d, %d)", r, draw),
		PreConditionFunc: func(st commands.State) bool {
			q := st.(*alModel).reqs[r]
			return q.computed < alMax && q.lastStep != st.(*alModel).step
		},
		RunFunc: func(su commands.SystemUnderTest) commands.Result {
			s := su.(*alSUT)
			t := &s.tables[r]
			res := alResult{hitBlock: statecache.NullBlock}
			res.before = s.mgr.State(t)
			res.beforeTable = slices.Clone(t.Blocks)
			if res.before.CopySource != statecache.NullBlock {
				res.srcRefsBefore = s.pool.RefCount(res.before.CopySource)
			}
			c, hitTokens := s.computed[r], 0
			var hit []int32
			if len(t.Blocks) == 0 {
				n := statecache.MambaHit{Mode: statecache.MambaAlign, Block: alB}.FindLongestCacheHit(s.pool, s.hashes, alPrompt-1, alB, []int32{0}, s.dst)
				hit, hitTokens = s.dst[0], n*alB
				if n > 0 {
					res.hitBlock = hit[n-1]
				}
			}
			numTokens := max(alPrompt, c+1)
			n := min(draw, alPrompt-c-hitTokens)
			if c+hitTokens >= alPrompt {
				n = 1
			}
			n = sched.AlignMambaChunk(c+hitTokens, n, alPrompt, numTokens, alB, false)
			if n == 0 {
				alSeen.skipped++
				res.pool = s.consistency()
				return res // the scheduler skips it this step
			}
			if err := s.mgr.RemoveSkippedBlocks(id, t, c); err != nil {
				return alResult{pool: err.Error()}
			}
			total := c + hitTokens
			if s.mgr.BlocksToAllocate(t, total+n, total, hit) > s.pool.NumFree() {
				alSeen.sameStep++
				res.after = s.mgr.State(t)
				res.pool = s.consistency()
				return res // a same-step hit: waits a step
			}
			res.ran = true
			if len(t.Blocks) == 0 {
				if err := s.mgr.AddHitBlocks(id, t, hit, hitTokens); err != nil {
					return alResult{pool: err.Error()}
				}
			}
			if err := s.mgr.AllocateNewBlocks(id, t, total+n); err != nil {
				return alResult{pool: err.Error()}
			}
			if err := s.mgr.CacheBlocks(id, t, total+n, s.hashes); err != nil {
				return alResult{pool: err.Error()}
			}
			s.computed[r] = total + n
			res.after = s.mgr.State(t)
			if res.after.CopySource != statecache.NullBlock {
				alSeen.copies++
				if res.after.CopySource == res.hitBlock {
					alSeen.restores++
				}
			}
			if res.before.CopySource != statecache.NullBlock {
				res.srcRefsAfter = s.pool.RefCount(res.before.CopySource)
			}
			res.pool = s.consistency()
			return res
		},
		NextStateFunc: func(st commands.State) commands.State {
			m := st.(*alModel).clone()
			q := &m.reqs[r]
			m.ran, m.hitPos, m.freedSrc, m.wantFresh = false, -1, false, false
			c, hitTokens := q.computed, 0
			if !q.running {
				m.hitPos = m.hit()
				hitTokens = (m.hitPos + 1) * alB
			}
			numTokens := max(alPrompt, c+1)
			n := min(draw, alPrompt-c-hitTokens)
			if c+hitTokens >= alPrompt {
				n = 1
			}
			// The policy's rule, written out: whole blocks short of the
			// last boundary (36), the rest of the way to it, then as is.
			start := c + hitTokens
			switch last := numTokens - numTokens%alB; {
			case start >= max(alPrompt, numTokens-1):
			case start+n < last:
				n = n / alB * alB
			case start < last && last < start+n:
				n = last - start
			}
			if n == 0 {
				m.wantRunPos, m.wantSrcPos, m.wantSrcIsHit = q.runPos, q.srcPos, q.srcIsHit
				return m
			}
			if !q.running && m.hitPos >= 0 && m.cached[m.hitPos] == m.step {
				m.wantRunPos, m.wantSrcPos, m.wantSrcIsHit = q.runPos, q.srcPos, q.srcIsHit
				return m // same-step hit
			}
			m.ran = true
			if q.srcPos >= 0 {
				m.freedSrc = true // the copy source goes at the next schedule
				q.srcPos = -1
			}
			total := start + n
			run := (total+alB-1)/alB - 1
			switch {
			case !q.running && m.hitPos >= 0:
				q.srcPos, q.srcIsHit, m.wantFresh = m.hitPos, true, true
			case q.running && run != q.runPos:
				q.srcPos, q.srcIsHit, m.wantFresh = q.runPos, false, true
			}
			q.runPos, q.running, q.computed, q.lastStep = run, true, total, m.step
			if total%alB == 0 && m.cached[total/alB-1] == 0 {
				m.cached[total/alB-1] = m.step
			}
			m.wantRunPos, m.wantSrcPos, m.wantSrcIsHit = q.runPos, q.srcPos, q.srcIsHit
			return m
		},
		PostConditionFunc: func(st commands.State, rs commands.Result) *gopter.PropResult {
			m, res := st.(*alModel), rs.(alResult)
			fail := func(format string, a ...any) *gopter.PropResult {
				return &gopter.PropResult{Status: gopter.PropFalse, Error: fmt.Errorf(format, a...)}
			}
			if res.pool != "" {
				return fail("%s", res.pool)
			}
			if res.ran != m.ran {
				return fail("scheduled %v, model %v", res.ran, m.ran)
			}
			if !res.ran {
				return &gopter.PropResult{Status: gopter.PropTrue}
			}
			a := res.after
			if a.RunningIndex != m.wantRunPos || a.CopySourceIndex != m.wantSrcPos {
				return fail("running at %d, copy source at %d; model %d, %d", a.RunningIndex, a.CopySourceIndex, m.wantRunPos, m.wantSrcPos)
			}
			if want := 1 + b2i(m.wantSrcPos >= 0); a.Held != want {
				return fail("holds %d blocks, model %d", a.Held, want)
			}
			switch {
			case m.wantSrcIsHit && a.CopySource != res.hitBlock:
				return fail("copy source %d, the hit was block %d", a.CopySource, res.hitBlock)
			case m.wantSrcPos >= 0 && !m.wantSrcIsHit && a.CopySource != res.before.Running:
				return fail("copy source %d, the previous running block was %d", a.CopySource, res.before.Running)
			case m.wantFresh && (slices.Contains(res.beforeTable, a.Running) || a.Running == res.hitBlock):
				return fail("running block %d is not fresh (table before %v, hit %d)", a.Running, res.beforeTable, res.hitBlock)
			}
			if m.freedSrc {
				if res.before.CopySource == statecache.NullBlock {
					return fail("the model expected a copy source to free, there was none")
				}
				if slices.Contains(allBlocks(a), res.before.CopySource) || res.srcRefsAfter != res.srcRefsBefore-1 {
					return fail("copy source %d not freed one step later: refs %d -> %d", res.before.CopySource, res.srcRefsBefore, res.srcRefsAfter)
				}
			}
			return &gopter.PropResult{Status: gopter.PropTrue}
		},
	}
}

func allBlocks(s statecache.MambaState) []int32 { return []int32{s.Running, s.CopySource} }

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func alFree(r int) commands.Command {
	id := statecache.RequestID(r)
	return &commands.ProtoCommand{
		Name:             fmt.Sprintf("free(req %d)", r),
		PreConditionFunc: func(st commands.State) bool { return st.(*alModel).reqs[r].running },
		RunFunc: func(su commands.SystemUnderTest) commands.Result {
			s := su.(*alSUT)
			if err := s.mgr.Free(id, &s.tables[r]); err != nil {
				return alResult{pool: err.Error()}
			}
			s.computed[r] = 0
			res := alResult{pool: s.consistency()}
			if len(s.tables[r].Blocks) != 0 {
				res.pool = fmt.Sprintf("request %d's table after free: %v", r, s.tables[r].Blocks)
			}
			return res
		},
		NextStateFunc: func(st commands.State) commands.State {
			m := st.(*alModel).clone()
			m.reqs[r] = alReq{runPos: -1, srcPos: -1, lastStep: m.reqs[r].lastStep}
			m.ran = false
			return m
		},
		PostConditionFunc: func(_ commands.State, rs commands.Result) *gopter.PropResult {
			if p := rs.(alResult).pool; p != "" {
				return &gopter.PropResult{Status: gopter.PropFalse, Error: fmt.Errorf("%s", p)}
			}
			return &gopter.PropResult{Status: gopter.PropTrue}
		},
	}
}

func TestMambaAlignLifecycleCommands(t *testing.T) {
	var step int64
	newStep := &commands.ProtoCommand{
		Name: "new step",
		RunFunc: func(su commands.SystemUnderTest) commands.Result {
			step++
			su.(*alSUT).pool.NewStepStarts(step)
			return alResult{}
		},
		NextStateFunc: func(st commands.State) commands.State {
			m := st.(*alModel).clone()
			m.step++
			m.ran = false
			return m
		},
		PostConditionFunc: func(commands.State, commands.Result) *gopter.PropResult {
			return &gopter.PropResult{Status: gopter.PropTrue}
		},
	}
	toks := make([]int32, alMax)
	for i := range toks {
		toks[i] = int32(i * 7)
	}
	hashes := statecache.AppendBlockHashes(nil, toks, alB)
	cmds := &commands.ProtoCommands{
		NewSystemUnderTestFunc: func(commands.State) commands.SystemUnderTest {
			step = 1
			p := statecache.NewBlockPoolWith(alBlocks, statecache.PoolOptions{EnablePrefixCaching: true, FreeOrder: statecache.FreshToHead})
			p.NewStepStarts(step)
			mgr, err := statecache.NewMambaManager(p, statecache.MambaSpec{Mode: statecache.MambaAlign, BlockSize: alB}, 0)
			if err != nil {
				panic(err)
			}
			return &alSUT{pool: p, mgr: mgr, hashes: hashes, dst: [][]int32{nil}}
		},
		InitialStateGen: gen.Const(func() commands.State {
			m := &alModel{step: 1}
			for i := range m.reqs {
				m.reqs[i] = alReq{runPos: -1, srcPos: -1}
			}
			return m
		}()),
		GenCommandFunc: func(commands.State) gopter.Gen {
			return gen.Weighted([]gen.WeightedGen{
				{Weight: 6, Gen: gen.IntRange(0, alReqs-1).FlatMap(func(r any) gopter.Gen {
					return gen.IntRange(1, 3*alB).Map(func(n int) commands.Command { return alSchedule(r.(int), n) })
				}, nil)},
				{Weight: 3, Gen: gen.Const(newStep)},
				{Weight: 1, Gen: gen.IntRange(0, alReqs-1).Map(func(r int) commands.Command { return alFree(r) })},
			})
		},
	}
	alSeen = alExercised{}
	params := gopter.DefaultTestParametersWithSeed(1)
	params.MinSuccessfulTests = 300
	props := gopter.NewProperties(params)
	props.Property("align lifecycle", commands.Prop(cmds))
	props.TestingRun(t)
	t.Logf("exercised: %+v", alSeen)
	// The runs must reach what the properties are about.
	if alSeen.restores == 0 || alSeen.sameStep == 0 || alSeen.copies == 0 || alSeen.skipped == 0 {
		t.Errorf("runs exercised too little: %+v", alSeen)
	}
}

// alExercised counts what the runs reached.
type alExercised struct{ restores, sameStep, copies, skipped int }

var alSeen alExercised
