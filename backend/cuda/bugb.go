//go:build cuda

package cuda

import (
	"fmt"
	"math"

	"statesim/backend/mock"
	"statesim/model"
	"statesim/statecache"
)

// BugB is one run of the prefill scan kernel on a slot past the 32-bit
// wrap, in a state buffer of Jamba-like pages, read back on the host.
type BugB struct {
	Bits        uint    `json:"index_bits"`
	Model       string  `json:"model"`
	DInner      int     `json:"d_inner"`
	DState      int     `json:"d_state"`
	StrideElems int64   `json:"stride_elems"`
	StateOffset int64   `json:"state_offset_elems"`
	NumSlots    int     `json:"num_slots"`
	BufferGiB   float64 `json:"buffer_gib"`
	// Slot is the request's state slot; FirstWrappingSlot is where the
	// 32-bit product first wraps.
	Slot              int32 `json:"slot"`
	FirstWrappingSlot int64 `json:"first_wrapping_slot"`
	// Predicted is the block the simulator's StateIndex says the final
	// state lands in (Slot itself when nothing wraps).
	Predicted     int32 `json:"predicted_block"`
	PredictedLast int32 `json:"predicted_last_block"`
	// Victim is the slot holding another request's state at the
	// predicted address under 32 bits (the same block id in both runs).
	Victim     int32 `json:"victim_slot"`
	VictimLast int32 `json:"victim_last_block"`
	// What the read-back shows: the final state's relative error where it
	// landed, whether the intended slot still holds its old bytes, and
	// whether the victim's state was overwritten.
	FinalAtPredicted  float64 `json:"final_state_rel_err_at_predicted"`
	IntendedStale     bool    `json:"intended_slot_stale"`
	VictimClobbered   bool    `json:"victim_clobbered"`
	VictimElemsChange int64   `json:"victim_elems_changed"`
	Tokens            int     `json:"tokens"`
	// The next decode step on the slot (selective_state_update_n16,
	// 64-bit index): the relative distance of its output from the output
	// computed from the slot's old bytes and from the prefill's final
	// state; DecodeReadStale when it matches the old bytes.
	DecodeVsStale   float64 `json:"decode_rel_err_vs_stale"`
	DecodeVsFinal   float64 `json:"decode_rel_err_vs_final"`
	DecodeReadStale bool    `json:"decode_read_stale"`
}

// BugBShape is Jamba Reasoning 3B's Mamba shape (d_inner 5120, d_state 16)
// with fp32 state and conv window, as the cuda backend caches them.
func BugBShape() (model.Shape, error) {
	s, err := model.Preset("jamba-reasoning-3b")
	if err != nil {
		return s, err
	}
	s.DType, s.SSMStateDType = "float32", "float32"
	return s, nil
}

// ConfirmBugB runs the backend's selective_scan_fwd kernel for bits (32
// or 64) over one prefill row of tokens (no initial state) in the first
// slot whose 32-bit address wraps past the null block, in a buffer of that
// many pages holding a sentinel everywhere and another request's state in
// the victim slot, and reads the slots back.
func ConfirmBugB(dev *Device, shape model.Shape, bits uint, tokens int) (BugB, error) {
	layout := shape.Layout(16)
	geo, err := mock.NewGeometry(&shape, &layout)
	if err != nil {
		return BugB{}, err
	}
	ix := statecache.StateIndex{Stride: geo.PageElems, Bits: 32, Elems: geo.StateElems, Offset: geo.StateOffset}
	first := ix.FirstWrappingSlot()
	// The first wrapping slot whose write misses the null block; the
	// write may straddle two pages, the first is the victim.
	slot, victim, victimEnd := int32(-1), int32(-1), int32(-1)
	for s := first; s < first+4096; s++ {
		f, l, wrapped := ix.Span(int32(s))
		if wrapped && f > statecache.NullBlock {
			slot, victim, victimEnd = int32(s), f, l
			break
		}
	}
	if slot < 0 {
		return BugB{}, fmt.Errorf("cuda: no slot in [%d, %d) wraps past the null block", first, first+4096)
	}
	ix.Bits = bits
	pred, predEnd, _ := ix.Span(slot)
	r := BugB{PredictedLast: predEnd, VictimLast: victimEnd, Bits: bits, Model: shape.Name, DInner: shape.DInner(), DState: shape.MambaDState, StrideElems: geo.PageElems,
		StateOffset: geo.StateOffset, NumSlots: int(slot) + 1, Slot: slot, FirstWrappingSlot: first, Predicted: pred,
		Victim: victim, Tokens: tokens}
	total := int64(r.NumSlots) * geo.PageElems
	r.BufferGiB = float64(4*total) / (1 << 30)
	states, err := dev.Alloc(4 * total)
	if err != nil {
		return r, err
	}
	defer dev.Free(states)
	// Every page holds a sentinel (old bytes); the victim holds another
	// request's state.
	const sentinel = 0x3e99999a // 0.3f
	if err := cuMemsetD32(states, sentinel, total); err != nil {
		return r, err
	}
	di, N, R := shape.DInner(), shape.MambaDState, 4
	src := splitmix(uint64(bits))
	victimState := src.floats(int(geo.StateElems), -1, 1)
	victimAt := states + devPtr(4*(int64(victim)*geo.PageElems+geo.StateOffset))
	if err := Upload(victimAt, victimState); err != nil {
		return r, err
	}
	T := tokens
	xc, dtp, dbc, xz := src.floats(T*di, -1, 1), src.floats(T*di, -3, 0), src.floats(T*(R+2*N), -1, 1), src.floats(T*2*di, -2, 2)
	A, D, bias := make([]float32, di*N), src.floats(di, 0, 0.2), src.floats(di, -4, -2)
	for d := 0; d < di; d++ {
		for n := 0; n < N; n++ {
			A[d*N+n] = -float32(n + 1)
		}
	}
	var ptrs []devPtr
	for _, v := range [][]float32{xc, dtp, dbc, xz, A, D, bias} {
		p, err := NewBuffer(dev, v)
		if err != nil {
			return r, err
		}
		ptrs = append(ptrs, p)
		defer dev.Free(p)
	}
	y, err := dev.Alloc(4 * int64(T*di))
	if err != nil {
		return r, err
	}
	defer dev.Free(y)
	var meta []devPtr
	for _, v := range [][]int32{{0}, {0, int32(T)}, {slot}, {0}} { // rows, qsl, cache_idx, has_initial_state
		p, err := NewBuffer(dev, v)
		if err != nil {
			return r, err
		}
		meta = append(meta, p)
		defer dev.Free(p)
	}
	name := "selective_scan_fwd_u64"
	if bits == 32 {
		name = "selective_scan_fwd_u32"
	}
	if err := dev.Launch(name, [3]int{ceilDiv(di, 128), 1, 1}, [3]int{128, 1, 1}, 0,
		y, ptrs[0], ptrs[1], ptrs[2], R+2*N, R, ptrs[3], 2*di, ptrs[4], ptrs[5], ptrs[6],
		states+devPtr(4*geo.StateOffset), geo.PageElems, meta[0], meta[1], meta[2], meta[3], di, N); err != nil {
		return r, err
	}
	// The final state, in float64 from zero, as the kernel computes it.
	want := make([]float64, di*N)
	for d := 0; d < di; d++ {
		h := want[d*N : d*N+N]
		for t := 0; t < T; t++ {
			x := float64(dtp[t*di+d] + bias[d])
			dt := x
			if x <= 20 {
				dt = math.Log1p(math.Exp(x))
			}
			u := float64(xc[t*di+d])
			for n := 0; n < N; n++ {
				h[n] = math.Exp(float64(A[d*N+n])*dt)*h[n] + float64(dbc[t*(R+2*N)+R+n])*dt*u
			}
		}
	}
	read := func(block int32) ([]float32, error) {
		out := make([]float32, geo.StateElems)
		return out, Download(out, states+devPtr(4*(int64(block)*geo.PageElems+geo.StateOffset)))
	}
	base := int64(ix.Base(slot)) + geo.StateOffset // where the kernel wrote, elements
	landed := make([]float32, geo.StateElems)
	if err := Download(landed, states+devPtr(4*base)); err != nil {
		return r, err
	}
	r.FinalAtPredicted = relErr(landed, want)
	intended, err := read(slot)
	if err != nil {
		return r, err
	}
	r.IntendedStale = true
	for _, v := range intended {
		if math.Float32bits(v) != sentinel {
			r.IntendedStale = false
			break
		}
	}
	got, err := read(victim)
	if err != nil {
		return r, err
	}
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(victimState[i]) {
			r.VictimElemsChange++
		}
	}
	r.VictimClobbered = r.VictimElemsChange > 0

	// One decode step on the slot, with token 0's inputs.
	tok, err := NewBuffer(dev, []int32{0})
	if err != nil {
		return r, err
	}
	defer dev.Free(tok)
	if err := dev.Launch("selective_state_update_n16", [3]int{ceilDiv(di, 128), 1, 1}, [3]int{128, 1, 1}, 0,
		y, ptrs[0], ptrs[1], ptrs[2], R+2*N, R, ptrs[3], 2*di, ptrs[4], ptrs[5], ptrs[6],
		states+devPtr(4*geo.StateOffset), geo.PageElems, tok, meta[2], 1, 1, di); err != nil {
		return r, err
	}
	got1 := make([]float32, di)
	if err := Download(got1, y); err != nil {
		return r, err
	}
	stale := make([]float64, di*N)
	for i := range stale {
		stale[i] = float64(math.Float32frombits(sentinel))
	}
	decode := func(h0 []float64) []float64 {
		out := make([]float64, di)
		for d := 0; d < di; d++ {
			x := float64(dtp[d] + bias[d])
			dt := x
			if x <= 20 {
				dt = math.Log1p(math.Exp(x))
			}
			u := float64(xc[d])
			var acc float64
			for n := 0; n < N; n++ {
				h := math.Exp(float64(A[d*N+n])*dt)*h0[d*N+n] + float64(dbc[R+n])*dt*u
				acc += float64(dbc[R+N+n]) * h
			}
			z := float64(xz[di+d])
			out[d] = (acc + float64(D[d])*u) * z / (1 + math.Exp(-z))
		}
		return out
	}
	r.DecodeVsStale, r.DecodeVsFinal = relErr(got1, decode(stale)), relErr(got1, decode(want))
	r.DecodeReadStale = r.DecodeVsStale < 1e-4 && r.DecodeVsFinal > 1e-2
	return r, nil
}

func relErr(got []float32, want []float64) float64 {
	var num, den float64
	for i, g := range got {
		if g != g {
			return math.Inf(1)
		}
		num += (float64(g) - want[i]) * (float64(g) - want[i])
		den += want[i] * want[i]
	}
	return math.Sqrt(num / den)
}

type splitmixSrc struct{ s uint64 }

func splitmix(seed uint64) *splitmixSrc { return &splitmixSrc{seed} }

func (x *splitmixSrc) floats(n int, lo, hi float32) []float32 {
	out := make([]float32, n)
	for i := range out {
		x.s += 0x9e3779b97f4a7c15
		z := x.s
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		z ^= z >> 31
		out[i] = lo + (hi-lo)*float32(z>>40)/(1<<24)
	}
	return out
}
