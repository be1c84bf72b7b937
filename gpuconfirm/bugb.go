//go:build cuda

package gpuconfirm

import (
	"math"

	"gorgonia.org/cu"

	"statesim/backend/cuda"
)

// sentinel is the old bytes every page holds before the prefill (0.3f).
const sentinel = 0x3e99999a

// ConfirmBugB runs the backend's selective_scan_fwd kernel for bits (32
// or 64) over one prefill row of tokens (no initial state) in the first
// slot whose 32-bit address wraps past the null block (planBugB), in a
// buffer of that many pages holding a sentinel everywhere and another
// request's state in the victim slot; reads the slots back; then runs one
// decode step on the slot and compares its output with the outputs from
// the old bytes and from the final state.
func ConfirmBugB(dev *cuda.Device, bits uint, tokens int) (BugB, error) {
	shape, err := BugBShape()
	if err != nil {
		return BugB{}, err
	}
	plan, err := planBugB(shape, bits, tokens)
	if err != nil {
		return BugB{}, err
	}
	r := plan.BugB
	x := &experiment{dev: dev}
	defer x.free()
	states := x.alloc(4 * plan.elems())
	at := func(elem int64) cu.DevicePtr { return states + cu.DevicePtr(4*elem) }
	x.check(dev.Fill(states, sentinel, plan.elems()))
	// The inputs are drawn after the victim's state, from one stream per
	// index width, so both runs are reproducible.
	src := &splitmix{uint64(bits)}
	victimState := src.floats(int(plan.geo.StateElems), -1, 1)
	x.check(cuda.Upload(at(plan.stateAt(r.Victim)), victimState))
	di, N, R := shape.DInner(), shape.MambaDState, 4
	in := drawScan(src, tokens, di, N, R)
	xc, dtp, dbc, xz, A, D, bias := x.upload(in.xc), x.upload(in.dtp), x.upload(in.dbc), x.upload(in.xz), x.upload(in.A), x.upload(in.D), x.upload(in.bias)
	y := x.alloc(4 * int64(tokens*di))
	rows, qsl, cacheIdx, hasInit := x.uploadInt([]int32{0}), x.uploadInt([]int32{0, int32(tokens)}), x.uploadInt([]int32{r.Slot}), x.uploadInt([]int32{0})
	scan := "selective_scan_fwd_u64"
	if bits == 32 {
		scan = "selective_scan_fwd_u32"
	}
	x.launch(scan, di, y, xc, dtp, dbc, R+2*N, R, xz, 2*di, A, D, bias, at(plan.geo.StateOffset), plan.geo.PageElems,
		rows, qsl, cacheIdx, hasInit, di, N)
	if x.err != nil {
		return r, x.err
	}

	// Where the kernel wrote (StateIndex.Base, possibly wrapped), the
	// intended slot and the victim, read back.
	want := in.finalState()
	landed := x.download(at(int64(plan.ix.Base(r.Slot))+plan.geo.StateOffset), int(plan.geo.StateElems))
	intended := x.download(at(plan.stateAt(r.Slot)), int(plan.geo.StateElems))
	got := x.download(at(plan.stateAt(r.Victim)), int(plan.geo.StateElems))
	if x.err != nil {
		return r, x.err
	}
	r.FinalAtPredicted = relErr(landed, want)
	r.IntendedStale = true
	for _, v := range intended {
		r.IntendedStale = r.IntendedStale && math.Float32bits(v) == sentinel
	}
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(victimState[i]) {
			r.VictimElemsChange++
		}
	}
	r.VictimClobbered = r.VictimElemsChange > 0

	// One decode step on the slot (64-bit index), with token 0's inputs.
	tok := x.uploadInt([]int32{0})
	x.launch("selective_state_update_n16", di, y, xc, dtp, dbc, R+2*N, R, xz, 2*di, A, D, bias,
		at(plan.geo.StateOffset), plan.geo.PageElems, tok, cacheIdx, 1, 1, di)
	out := x.download(y, di)
	if x.err != nil {
		return r, x.err
	}
	stale := make([]float64, di*N)
	for i := range stale {
		stale[i] = float64(math.Float32frombits(sentinel))
	}
	r.DecodeVsStale, r.DecodeVsFinal = relErr(out, in.decode(stale)), relErr(out, in.decode(want))
	r.DecodeReadStale = r.DecodeVsStale < 1e-4 && r.DecodeVsFinal > 1e-2
	return r, nil
}

// experiment allocates, copies and launches on the device, keeping the
// first error and every allocation, so the experiment reads as its steps
// and frees everything at the end.
type experiment struct {
	dev    *cuda.Device
	allocs []cu.DevicePtr
	err    error
}

func (x *experiment) check(err error) {
	if x.err == nil {
		x.err = err
	}
}

func (x *experiment) alloc(bytes int64) cu.DevicePtr {
	if x.err != nil {
		return 0
	}
	p, err := x.dev.Alloc(bytes)
	x.check(err)
	if err == nil {
		x.allocs = append(x.allocs, p)
	}
	return p
}

func (x *experiment) upload(v []float32) cu.DevicePtr {
	p := x.alloc(4 * int64(len(v)))
	if x.err == nil {
		x.check(cuda.Upload(p, v))
	}
	return p
}

func (x *experiment) uploadInt(v []int32) cu.DevicePtr {
	p := x.alloc(4 * int64(len(v)))
	if x.err == nil {
		x.check(cuda.Upload(p, v))
	}
	return p
}

func (x *experiment) download(p cu.DevicePtr, n int) []float32 {
	out := make([]float32, n)
	if x.err == nil {
		x.check(cuda.Download(out, p))
	}
	return out
}

// launch runs kernel name over one row: a block of 128 threads per 128
// of the channels.
func (x *experiment) launch(name string, channels int, args ...any) {
	if x.err == nil {
		x.check(x.dev.Launch(name, [3]int{(channels + 127) / 128, 1, 1}, [3]int{128, 1, 1}, 0, args...))
	}
}

func (x *experiment) free() {
	for _, p := range x.allocs {
		x.dev.Free(p)
	}
}
