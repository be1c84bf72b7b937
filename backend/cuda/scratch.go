//go:build cuda

package cuda

import (
	"unsafe"

	"gorgonia.org/cu"
)

// dbuf is a device buffer that grows.
type dbuf struct {
	p cu.DevicePtr
	n int64 // bytes
}

// buf returns scratch buffer name with room for n bytes. Buffers grow by
// half again and are never shrunk, so a run's steady state allocates
// nothing per step.
func (b *Backend) buf(name string, n int64) (cu.DevicePtr, error) {
	return growBuf(b.dev, b.bufs, name, n)
}

// growBuf is buf over any set of named buffers on d.
func growBuf(d *Device, bufs map[string]*dbuf, name string, n int64) (cu.DevicePtr, error) {
	x := bufs[name]
	if x == nil {
		x = &dbuf{}
		bufs[name] = x
	}
	if n > x.n {
		if x.p != 0 {
			d.Free(x.p)
			x.p, x.n = 0, 0
		}
		c := max(n+n/2, 1024)
		p, err := d.Alloc(c)
		if err != nil {
			return 0, err
		}
		x.p, x.n = p, c
	}
	return x.p, nil
}

// put uploads v into scratch buffer name.
func put[T int32 | int64 | float32](b *Backend, name string, v []T) (cu.DevicePtr, error) {
	return putIn(b.dev, b.bufs, name, v)
}

func putIn[T int32 | int64 | float32](d *Device, bufs map[string]*dbuf, name string, v []T) (cu.DevicePtr, error) {
	var z T
	p, err := growBuf(d, bufs, name, int64(len(v))*int64(unsafe.Sizeof(z)))
	if err != nil {
		return 0, err
	}
	return p, Upload(p, v)
}

// devBatch is a packed batch's index arrays on the device (see batch).
type devBatch struct {
	qsl, hasInit, dRows, pRows, tokens, tokRow, tokPos cu.DevicePtr
	cacheIdx, dTok, dSlot, blockTables, slotMapping    cu.DevicePtr
}

// uploadBatch copies the batch's index arrays into scratch buffers.
func (b *Backend) uploadBatch(bt *batch) (devBatch, error) {
	var d devBatch
	for _, u := range []struct {
		p    *cu.DevicePtr
		name string
		v    []int32
	}{{&d.qsl, "qsl", bt.qsl}, {&d.hasInit, "hasInit", bt.hasInit}, {&d.dRows, "dRows", bt.dRows}, {&d.pRows, "pRows", bt.pRows},
		{&d.tokens, "tokens", bt.tokens}, {&d.tokRow, "tokRow", bt.tokRow}, {&d.tokPos, "tokPos", bt.tokPos},
		{&d.cacheIdx, "cacheIdx", bt.cacheIdx}, {&d.blockTables, "bt", bt.blockTables}, {&d.dTok, "dTok", bt.dTok}, {&d.dSlot, "dSlot", bt.dSlot}} {
		var err error
		if *u.p, err = put(b, u.name, u.v); err != nil {
			return d, err
		}
	}
	var err error
	d.slotMapping, err = put(b, "slotMap", bt.slotMapping)
	return d, err
}

// activations are the forward pass's per-token float32 buffers.
type activations struct{ hid, nrm, mix, xz, xc, dbc, dtp, y, q, k, v, o cu.DevicePtr }

// activations sizes the scratch activations for T tokens.
func (b *Backend) activations(T int) (activations, error) {
	s := &b.cfg.Shape
	H, di, N, R := s.HiddenSize, s.DInner(), s.MambaDState, b.dtRank
	nh, nkv, hd := s.NumAttentionHeads, s.NumKVHeads, s.HeadDim
	var a activations
	for _, x := range []struct {
		p *cu.DevicePtr
		n string
		c int
	}{{&a.hid, "hid", T * H}, {&a.nrm, "nrm", T * H}, {&a.mix, "mix", T * H}, {&a.xz, "xz", T * 2 * di}, {&a.xc, "xc", T * di},
		{&a.dbc, "dbc", T * (R + 2*N)}, {&a.dtp, "dtp", T * di}, {&a.y, "y", T * di}, {&a.q, "q", T * nh * hd},
		{&a.k, "k", T * nkv * hd}, {&a.v, "v", T * nkv * hd}, {&a.o, "o", T * nh * hd}} {
		var err error
		if *x.p, err = b.f32(x.n, x.c); err != nil {
			return a, err
		}
	}
	return a, nil
}

// f32 is scratch buffer name with room for n float32s.
func (b *Backend) f32(name string, n int) (cu.DevicePtr, error) {
	return b.buf(name, 4*int64(max(n, 1)))
}
