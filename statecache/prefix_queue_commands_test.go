package statecache

// A gopter commands test of FreeBlockQueue against the plainest model of
// vLLM's FreeKVCacheBlockQueue: a slice, head first. Random popleft,
// popleft_n (statesim's batch of poplefts), remove (from anywhere),
// append, append_n and prepend_n run on both; after
// every command the queue walked forward, its length, head and tail, and
// every backward link must agree with the slice. A mutant whose Remove
// forgets to move the tail must be caught.

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/commands"
	"github.com/leanovate/gopter/gen"
)

// queueUnderTest is FreeBlockQueue's operations, so a mutant can stand in.
type queueUnderTest interface {
	PopLeft() int32
	PopLeftN(dst []int32)
	Remove(b int32)
	Append(b int32)
	AppendN(bs []int32)
	PrependN(bs []int32)
	inner() *FreeBlockQueue
}

type realQueue struct{ *FreeBlockQueue }

func (q realQueue) inner() *FreeBlockQueue { return q.FreeBlockQueue }

// tailLosingQueue removes the tail block without moving the tail.
type tailLosingQueue struct{ *FreeBlockQueue }

func (q tailLosingQueue) inner() *FreeBlockQueue { return q.FreeBlockQueue }
func (q tailLosingQueue) Remove(b int32) {
	tail := q.tail
	q.FreeBlockQueue.Remove(b)
	if b == tail && q.n > 0 {
		q.tail = b
	}
}

// queueModel: size ids, free the ones in the queue, head first.
type queueModel struct {
	size int
	free []int32
}

func (m *queueModel) String() string { return fmt.Sprintf("queue %v of %d ids", m.free, m.size) }

func (m *queueModel) clone() *queueModel {
	return &queueModel{size: m.size, free: slices.Clone(m.free)}
}

// outside is the k-th (mod count) id not in the queue, or -1.
func (m *queueModel) outside(k int) int32 {
	var out []int32
	for b := int32(0); int(b) < m.size; b++ {
		if !slices.Contains(m.free, b) {
			out = append(out, b)
		}
	}
	if len(out) == 0 {
		return -1
	}
	return out[k%len(out)]
}

// queueState is the queue's whole observable state.
type queueState struct {
	walk       []int32
	back       []int32 // tail to head through prev
	n          int
	head, tail int32
	popped     string // a popleft_n's blocks, when they were not the head's
}

// observe reads q, walking at most as many links as there are ids (a
// broken list may cycle).
func observe(q *FreeBlockQueue) queueState {
	s := queueState{n: q.Len(), head: q.head, tail: q.tail}
	for b, steps := q.head, 0; b != noBlock && steps <= len(q.next); b, steps = q.next[b], steps+1 {
		s.walk = append(s.walk, b)
	}
	for b, steps := q.tail, 0; b != noBlock && steps <= len(q.next); b, steps = q.prev[b], steps+1 {
		s.back = append(s.back, b)
	}
	return s
}

func queueAgrees(st commands.State, res commands.Result) *gopter.PropResult {
	m, r := st.(*queueModel), res.(queueState)
	fail := func(format string, a ...any) *gopter.PropResult {
		return &gopter.PropResult{Status: gopter.PropFalse, Error: fmt.Errorf(format, a...)}
	}
	if r.popped != "" {
		return fail("%s", r.popped)
	}
	want := m.free
	if !slices.Equal(r.walk, want) || r.n != len(want) {
		return fail("queue %v (len %d), model %v", r.walk, r.n, want)
	}
	back := slices.Clone(want)
	slices.Reverse(back)
	if !slices.Equal(r.back, back) {
		return fail("backward walk %v, model %v", r.back, back)
	}
	head, tail := noBlock, noBlock
	if len(want) > 0 {
		head, tail = want[0], want[len(want)-1]
	}
	if r.head != head || r.tail != tail {
		return fail("head %d tail %d, model %d %d", r.head, r.tail, head, tail)
	}
	return &gopter.PropResult{Status: gopter.PropTrue}
}

// Every command picks its block ids by position (the k-th queued, the
// k-th outside), from the model in NextState and from the queue itself in
// Run: the two agree until a postcondition has already failed.
func queueCommand(name string, run func(q queueUnderTest, now *queueModel) int32, next func(*queueModel), pre func(*queueModel) bool) commands.Command {
	return &commands.ProtoCommand{
		Name: name,
		RunFunc: func(s commands.SystemUnderTest) commands.Result {
			q := s.(queueUnderTest)
			now := &queueModel{size: len(q.inner().next), free: q.inner().AppendTo(nil)}
			run(q, now)
			return observe(q.inner())
		},
		NextStateFunc: func(st commands.State) commands.State {
			n := st.(*queueModel).clone()
			next(n)
			return n
		},
		PreConditionFunc: func(st commands.State) bool {
			return pre == nil || pre(st.(*queueModel))
		},
		PostConditionFunc: queueAgrees,
	}
}

func popLeftCmd() commands.Command {
	return queueCommand("popleft",
		func(q queueUnderTest, _ *queueModel) int32 { return q.PopLeft() },
		func(m *queueModel) { m.free = m.free[1:] },
		func(m *queueModel) bool { return len(m.free) > 0 })
}

func popLeftNCmd(n int) commands.Command {
	return &commands.ProtoCommand{
		Name: fmt.Sprintf("popleft_n(%d)", n),
		RunFunc: func(s commands.SystemUnderTest) commands.Result {
			q := s.(queueUnderTest)
			head := q.inner().AppendTo(nil)[:n]
			dst := make([]int32, n)
			q.PopLeftN(dst)
			st := observe(q.inner())
			if !slices.Equal(dst, head) {
				st.popped = fmt.Sprintf("popleft_n(%d) gave %v, the head held %v", n, dst, head)
			}
			return st
		},
		NextStateFunc: func(st commands.State) commands.State {
			m := st.(*queueModel).clone()
			m.free = m.free[n:]
			return m
		},
		PreConditionFunc:  func(st commands.State) bool { return len(st.(*queueModel).free) >= n },
		PostConditionFunc: queueAgrees,
	}
}

func removeCmd(k int) commands.Command {
	return queueCommand(fmt.Sprintf("remove(#%d)", k),
		func(q queueUnderTest, m *queueModel) int32 {
			b := m.free[k%len(m.free)]
			q.Remove(b)
			return b
		},
		func(m *queueModel) { m.free = slices.Delete(m.free, k%len(m.free), k%len(m.free)+1) },
		func(m *queueModel) bool { return len(m.free) > 0 })
}

func appendCmd(k int) commands.Command {
	return queueCommand(fmt.Sprintf("append(outside #%d)", k),
		func(q queueUnderTest, m *queueModel) int32 {
			b := m.outside(k)
			q.Append(b)
			return b
		},
		func(m *queueModel) { m.free = append(m.free, m.outside(k)) },
		func(m *queueModel) bool { return m.outside(k) >= 0 })
}

// batch is up to n ids outside the queue, picked from k.
func (m *queueModel) batch(k, n int) []int32 {
	var out []int32
	c := m.clone()
	for i := 0; i < n; i++ {
		b := c.outside(k + i)
		if b < 0 {
			break
		}
		out = append(out, b)
		c.free = append(c.free, b)
	}
	return out
}

func appendNCmd(k, n int) commands.Command {
	return queueCommand(fmt.Sprintf("append_n(%d from #%d)", n, k),
		func(q queueUnderTest, m *queueModel) int32 { q.AppendN(m.batch(k, n)); return 0 },
		func(m *queueModel) { m.free = append(m.free, m.batch(k, n)...) },
		nil)
}

func prependNCmd(k, n int) commands.Command {
	return queueCommand(fmt.Sprintf("prepend_n(%d from #%d)", n, k),
		func(q queueUnderTest, m *queueModel) int32 { q.PrependN(m.batch(k, n)); return 0 },
		func(m *queueModel) { m.free = append(m.batch(k, n), m.free...) },
		nil)
}

var cmdType = reflect.TypeOf((*commands.Command)(nil)).Elem()

func queueCommands(mutant bool) commands.Commands {
	return &commands.ProtoCommands{
		NewSystemUnderTestFunc: func(st commands.State) commands.SystemUnderTest {
			m := st.(*queueModel)
			q := NewFreeBlockQueue(m.size, 0, true)
			if mutant {
				return tailLosingQueue{q}
			}
			return realQueue{q}
		},
		InitialStateGen: gen.IntRange(1, 12).Map(func(n int) *queueModel {
			return &queueModel{size: n, free: span32(0, n)}
		}),
		GenCommandFunc: func(commands.State) gopter.Gen {
			two := func(mk func(a, b int) commands.Command) gopter.Gen {
				return gen.IntRange(0, 15).FlatMap(func(v any) gopter.Gen {
					return gen.IntRange(0, 4).Map(func(n int) commands.Command { return mk(v.(int), n) })
				}, cmdType)
			}
			return gen.Weighted([]gen.WeightedGen{
				{Weight: 3, Gen: gen.Const(popLeftCmd())},
				{Weight: 2, Gen: gen.IntRange(0, 4).Map(func(n int) commands.Command { return popLeftNCmd(n) })},
				{Weight: 3, Gen: gen.IntRange(0, 15).Map(func(k int) commands.Command { return removeCmd(k) })},
				{Weight: 3, Gen: gen.IntRange(0, 15).Map(func(k int) commands.Command { return appendCmd(k) })},
				{Weight: 1, Gen: two(appendNCmd)},
				{Weight: 1, Gen: two(prependNCmd)},
			})
		},
	}
}

func span32(lo, hi int) []int32 { return span(lo, hi) }

func checkQueue(mutant bool) *gopter.TestResult {
	params := gopter.DefaultTestParametersWithSeed(7)
	params.MinSuccessfulTests = 300
	params.Workers = 1
	return commands.Prop(queueCommands(mutant)).Check(params)
}

func TestFreeBlockQueueFollowsModel(t *testing.T) {
	if res := checkQueue(false); !res.Passed() {
		t.Fatalf("the free queue departs from the model: %v\nargs: %v", res.Error, res.Args)
	}
}

func TestFreeBlockQueueModelCatchesLostTail(t *testing.T) {
	res := checkQueue(true)
	if res.Passed() || res.Status != gopter.TestFailed || len(res.Args) == 0 {
		t.Fatalf("a Remove that loses the tail went unnoticed: status %v, %v", res.Status, res.Error)
	}
	t.Logf("counterexample: %v", res.Args[0].Arg)
}
