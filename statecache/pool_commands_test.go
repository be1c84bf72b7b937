// Stateful tests of the block pool and the KV cache manager with gopter's
// commands package: random allocate / free / pop / push sequences run
// against the real pool and against a plain model of vLLM's rules (FIFO
// free queue, block 0 reserved, each group's blocks freed in reverse
// order to the tail, every block held by at most one request), and the
// two must agree after every command.
package statecache_test

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/commands"
	"github.com/leanovate/gopter/gen"

	"statesim/model"
	"statesim/statecache"
)

// Requests 0..2 go through the manager (block tables); 10 and 11 pop and
// push raw blocks, as a second user of the same pool.
const (
	numTabled = 3
	rawBase   = 10
	numRaw    = 2
)

var layout = func() model.Layout {
	s, err := model.Preset("tiny-hybrid") // groups: mamba, mamba, attention, mamba
	if err != nil {
		panic(err)
	}
	return s.Layout(16)
}()

// table is the model's block table: one list per attention group and one
// slot (0 = none) per Mamba group, in layout order.
type table struct {
	attn  [][]int32
	mamba []int32
}

func newTable() table {
	return table{attn: make([][]int32, layout.NumAttnGroups()), mamba: make([]int32, layout.NumMambaGroups())}
}

func (t table) clone() table {
	c := table{attn: make([][]int32, len(t.attn)), mamba: slices.Clone(t.mamba)}
	for i, g := range t.attn {
		c.attn[i] = slices.Clone(g)
	}
	return c
}

// poolModel is the specification the pool must follow.
type poolModel struct {
	n      int
	free   []int32 // head first
	holder []statecache.RequestID
	tables [numTabled]table
	raw    [numRaw][]int32
	// What the last command must have returned.
	wantOK  bool
	wantErr bool
	wantBlk int32
}

func (m *poolModel) clone() *poolModel {
	c := *m
	c.free = slices.Clone(m.free)
	c.holder = slices.Clone(m.holder)
	for i := range m.tables {
		c.tables[i] = m.tables[i].clone()
	}
	for i := range m.raw {
		c.raw[i] = slices.Clone(m.raw[i])
	}
	return &c
}

func (m *poolModel) String() string { return fmt.Sprintf("pool of %d blocks", m.n) }

func (m *poolModel) pop(req statecache.RequestID) int32 {
	b := m.free[0]
	m.free = m.free[1:]
	m.holder[b] = req
	return b
}

func (m *poolModel) push(b int32) {
	m.free = append(m.free, b)
	m.holder[b] = statecache.NoRequest
}

// sut is the system under test: a manager, its tables, and how it frees.
type sut struct {
	kv     *statecache.KVCacheManager
	tables [numTabled]statecache.BlockTable
	free   func(kv *statecache.KVCacheManager, req statecache.RequestID, t *statecache.BlockTable) error
}

// snapshot is what every command returns: its own result and the pool's
// whole observable state after it.
type snapshot struct {
	ok     bool
	err    error
	blk    int32
	free   []int32
	holder []statecache.RequestID
	held   int
	tables [numTabled]table
}

func snap(s *sut, ok bool, blk int32, err error) snapshot {
	r := snapshot{ok: ok, err: err, blk: blk, free: s.kv.Pool.FreeQueue(), held: s.kv.Pool.NumHeld()}
	for b := 0; b < s.kv.Pool.NumBlocks(); b++ {
		r.holder = append(r.holder, s.kv.Pool.Holder(int32(b)))
	}
	for i := range s.tables {
		t := newTable()
		for g, bs := range s.tables[i].Attn {
			t.attn[g] = slices.Clone(bs)
		}
		copy(t.mamba, s.tables[i].Mamba)
		r.tables[i] = t
	}
	return r
}

// agree compares the pool with the model after a command.
func agree(st commands.State, res commands.Result) *gopter.PropResult {
	m, r := st.(*poolModel), res.(snapshot)
	fail := func(format string, a ...any) *gopter.PropResult {
		return &gopter.PropResult{Status: gopter.PropFalse, Error: fmt.Errorf(format, a...)}
	}
	if (r.err != nil) != m.wantErr {
		return fail("error %v, model expected error: %v", r.err, m.wantErr)
	}
	if r.ok != m.wantOK || r.blk != m.wantBlk {
		return fail("returned ok=%v block %d, model %v block %d", r.ok, r.blk, m.wantOK, m.wantBlk)
	}
	if !slices.Equal(r.free, m.free) {
		return fail("free queue %v, model %v", r.free, m.free)
	}
	if !slices.Equal(r.holder, m.holder) {
		return fail("holders %v, model %v", r.holder, m.holder)
	}
	if r.holder[statecache.NullBlock] != statecache.NoRequest || slices.Contains(r.free, statecache.NullBlock) {
		return fail("the null block left reserve: holder %d, free queue %v", r.holder[0], r.free)
	}
	if r.held+len(r.free) != m.n-1 {
		return fail("%d held + %d free ≠ %d usable blocks", r.held, len(r.free), m.n-1)
	}
	for i := range r.tables {
		if !slices.Equal(r.tables[i].mamba, m.tables[i].mamba) || !slices.EqualFunc(r.tables[i].attn, m.tables[i].attn, slices.Equal[[]int32]) {
			return fail("request %d's table %v, model %v", i, r.tables[i], m.tables[i])
		}
	}
	return &gopter.PropResult{Status: gopter.PropTrue}
}

func command(name string, run func(*sut) snapshot, next func(*poolModel), pre func(*poolModel) bool) commands.Command {
	return &commands.ProtoCommand{
		Name:    name,
		RunFunc: func(s commands.SystemUnderTest) commands.Result { return run(s.(*sut)) },
		NextStateFunc: func(st commands.State) commands.State {
			m := st.(*poolModel).clone()
			m.wantOK, m.wantErr, m.wantBlk = false, false, 0
			next(m)
			return m
		},
		PreConditionFunc: func(st commands.State) bool {
			return pre == nil || pre(st.(*poolModel))
		},
		PostConditionFunc: agree,
	}
}

// allocate grows request i's table to hold tokens tokens, all or nothing,
// popping in layout group order.
func allocate(i, tokens int) commands.Command {
	id := statecache.RequestID(i)
	return command(fmt.Sprintf("allocate(req %d, %d tokens)", i, tokens),
		func(s *sut) snapshot {
			ok, err := s.kv.Allocate(id, &s.tables[i], tokens)
			if !ok {
				exercised.allocShort++
			}
			return snap(s, ok, 0, err)
		},
		func(m *poolModel) {
			t := &m.tables[i]
			want := (tokens + layout.BlockSize - 1) / layout.BlockSize
			need := 0
			for _, g := range t.attn {
				need += max(0, want-len(g))
			}
			for _, s := range t.mamba {
				if s == 0 {
					need++
				}
			}
			if need > len(m.free) {
				return
			}
			m.wantOK = true
			na, nm := 0, 0
			for _, g := range layout.Groups {
				if g.Kind == model.Mamba {
					if t.mamba[nm] == 0 {
						t.mamba[nm] = m.pop(id)
					}
					nm++
					continue
				}
				for len(t.attn[na]) < want {
					t.attn[na] = append(t.attn[na], m.pop(id))
				}
				na++
			}
		}, nil)
}

// free returns request i's blocks: groups in layout order, each group's
// blocks in reverse, to the tail.
func free(i int) commands.Command {
	id := statecache.RequestID(i)
	return command(fmt.Sprintf("free(req %d)", i),
		func(s *sut) snapshot {
			if len(s.tables[i].Attn[0]) >= 2 {
				exercised.multiBlockFree++
			}
			return snap(s, false, 0, s.free(s.kv, id, &s.tables[i]))
		},
		func(m *poolModel) {
			t := &m.tables[i]
			na, nm := 0, 0
			for _, g := range layout.Groups {
				if g.Kind == model.Mamba {
					if t.mamba[nm] != 0 {
						m.push(t.mamba[nm])
						t.mamba[nm] = 0
					}
					nm++
					continue
				}
				for k := len(t.attn[na]) - 1; k >= 0; k-- {
					m.push(t.attn[na][k])
				}
				t.attn[na] = nil
				na++
			}
		}, nil)
}

// pop takes the head block for raw request k; an empty queue is an error.
func pop(k int) commands.Command {
	id := statecache.RequestID(rawBase + k)
	return command(fmt.Sprintf("pop(req %d)", id),
		func(s *sut) snapshot {
			b, err := s.kv.Pool.Pop(id)
			if err != nil {
				exercised.popEmpty++
			}
			return snap(s, err == nil, b, err)
		},
		func(m *poolModel) {
			if len(m.free) == 0 {
				m.wantErr = true
				return
			}
			b := m.pop(id)
			m.raw[k] = append(m.raw[k], b)
			m.wantOK, m.wantBlk = true, b
		}, nil)
}

// push returns the j-th (mod count) block raw request k holds.
func push(k, j int) commands.Command {
	id := statecache.RequestID(rawBase + k)
	var b int32
	c := command(fmt.Sprintf("push(req %d, its block #%d)", id, j),
		func(s *sut) snapshot { return snap(s, false, 0, s.kv.Pool.Push(id, b)) },
		func(m *poolModel) {
			idx := j % len(m.raw[k])
			b = m.raw[k][idx]
			m.raw[k] = slices.Delete(m.raw[k], idx, idx+1)
			m.push(b)
		},
		func(m *poolModel) bool { return len(m.raw[k]) > 0 })
	return c
}

// badPush pushes block b for raw request k when k does not hold it (the
// null block, a free block, another request's, or out of range): an error
// that must leave the pool untouched.
func badPush(k int, b int32) commands.Command {
	id := statecache.RequestID(rawBase + k)
	return command(fmt.Sprintf("badPush(req %d, block %d)", id, b),
		func(s *sut) snapshot {
			err := s.kv.Pool.Push(id, b)
			if err != nil {
				exercised.badPush++
			}
			return snap(s, false, 0, err)
		},
		func(m *poolModel) { m.wantErr = true },
		func(m *poolModel) bool { return b < 0 || int(b) >= m.n || m.holder[b] != id })
}

func poolCommands(freeFn func(*statecache.KVCacheManager, statecache.RequestID, *statecache.BlockTable) error) commands.Commands {
	return &commands.ProtoCommands{
		NewSystemUnderTestFunc: func(st commands.State) commands.SystemUnderTest {
			m := st.(*poolModel)
			s := &sut{kv: statecache.NewKVCacheManager(&layout, m.n), free: freeFn}
			for i := range s.tables {
				s.tables[i] = s.kv.NewTable()
			}
			return s
		},
		InitialStateGen: gen.IntRange(2, 24).Map(func(n int) *poolModel {
			m := &poolModel{n: n, holder: make([]statecache.RequestID, n)}
			for b := range m.holder {
				m.holder[b] = statecache.NoRequest
			}
			for b := 1; b < n; b++ {
				m.free = append(m.free, int32(b))
			}
			for i := range m.tables {
				m.tables[i] = newTable()
			}
			return m
		}),
		GenCommandFunc: func(st commands.State) gopter.Gen {
			m := st.(*poolModel)
			return gen.Weighted([]gen.WeightedGen{
				{Weight: 4, Gen: gen.IntRange(0, numTabled-1).FlatMap(func(v any) gopter.Gen {
					return gen.IntRange(1, 160).Map(func(t int) commands.Command { return allocate(v.(int), t) })
				}, commandType)},
				{Weight: 2, Gen: gen.IntRange(0, numTabled-1).Map(func(i int) commands.Command { return free(i) })},
				{Weight: 2, Gen: gen.IntRange(0, numRaw-1).Map(func(k int) commands.Command { return pop(k) })},
				{Weight: 2, Gen: gen.IntRange(0, numRaw-1).FlatMap(func(v any) gopter.Gen {
					return gen.IntRange(0, 7).Map(func(j int) commands.Command { return push(v.(int), j) })
				}, commandType)},
				{Weight: 1, Gen: gen.IntRange(0, numRaw-1).FlatMap(func(v any) gopter.Gen {
					return gen.IntRange(-1, m.n).Map(func(b int) commands.Command { return badPush(v.(int), int32(b)) })
				}, commandType)},
			})
		},
	}
}

// commandType is the result type of the FlatMap-built command generators.
var commandType = reflect.TypeOf((*commands.Command)(nil)).Elem()

func realFree(kv *statecache.KVCacheManager, req statecache.RequestID, t *statecache.BlockTable) error {
	return kv.Free(req, t)
}

func checkPool(t *testing.T, freeFn func(*statecache.KVCacheManager, statecache.RequestID, *statecache.BlockTable) error, tests int) *gopter.TestResult {
	params := gopter.DefaultTestParametersWithSeed(1)
	params.MinSuccessfulTests = tests
	params.Workers = 1
	return commands.Prop(poolCommands(freeFn)).Check(params)
}

// exercised counts the interesting paths the commands reached, so the
// test can require that it reached them.
var exercised struct{ allocShort, multiBlockFree, popEmpty, badPush int }

func TestPoolFollowsModel(t *testing.T) {
	exercised.allocShort, exercised.multiBlockFree, exercised.popEmpty, exercised.badPush = 0, 0, 0, 0
	res := checkPool(t, realFree, 400)
	if !res.Passed() {
		t.Fatalf("the pool departs from the model: %v\nargs: %v", res.Error, res.Args)
	}
	e := exercised
	if e.allocShort == 0 || e.multiBlockFree == 0 || e.popEmpty == 0 || e.badPush == 0 {
		t.Fatalf("the commands missed a path: %+v", e)
	}
	t.Logf("paths exercised: %+v", e)
}

// forwardFree is a mutant that frees attention blocks in allocation order,
// as a careless port of vLLM's free would.
func forwardFree(kv *statecache.KVCacheManager, req statecache.RequestID, t *statecache.BlockTable) error {
	na, nm := 0, 0
	for _, g := range layout.Groups {
		if g.Kind == model.Mamba {
			if s := t.Mamba[nm]; s != 0 {
				if err := kv.Pool.Push(req, s); err != nil {
					return err
				}
				t.Mamba[nm] = 0
			}
			nm++
			continue
		}
		for _, b := range t.Attn[na] {
			if err := kv.Pool.Push(req, b); err != nil {
				return err
			}
		}
		t.Attn[na] = t.Attn[na][:0]
		na++
	}
	return nil
}

// TestPoolModelCatchesForwardFree: the same commands must notice a free
// order that differs from vLLM's, and shrink it to a short sequence.
func TestPoolModelCatchesForwardFree(t *testing.T) {
	res := checkPool(t, forwardFree, 400)
	if res.Passed() {
		t.Fatal("a forward-order free went unnoticed")
	}
	if res.Status != gopter.TestFailed {
		t.Fatalf("want a failed post-condition, got status %v: %v", res.Status, res.Error)
	}
	if len(res.Args) == 0 {
		t.Fatalf("no counterexample: %v", res.Error)
	}
	t.Logf("counterexample: %v", res.Args[0].Arg)
}
