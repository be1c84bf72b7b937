package statecache

// StateIndex is the address arithmetic of the Mamba1 prefill kernel's state
// pointer: ssm_states + cache_index * batch_stride, with the product formed
// in Bits bits (32 in vLLM before PR #35275, so it wraps modulo 2^32; 64
// after). Addresses are in SSM-state elements relative to block 0's state.
type StateIndex struct {
	// Stride is the per-slot stride in elements (the unified page size in
	// SSM-state elements).
	Stride int64
	// Bits is the width the product is computed in (16..64; 32 = the bug).
	Bits uint
	// Elems is the number of state elements one write covers
	// (d_inner × d_state).
	Elems int64
	// Offset is where the SSM state starts inside a page, in elements
	// (after the conv state).
	Offset int64
}

// Base is the element address the kernel computes for slot.
func (ix StateIndex) Base(slot int32) uint64 {
	p := uint64(slot) * uint64(ix.Stride)
	if ix.Bits < 64 {
		p &= (uint64(1) << ix.Bits) - 1
	}
	return p
}

// Span is the range of blocks a full-state access for slot touches: first
// and last block id (equal unless the wrapped address straddles two pages)
// and whether it missed slot.
func (ix StateIndex) Span(slot int32) (first, last int32, wrapped bool) {
	b := ix.Base(slot) + uint64(ix.Offset)
	first = int32(b / uint64(ix.Stride))
	last = int32((b + uint64(ix.Elems) - 1) / uint64(ix.Stride))
	return first, last, first != slot || last != slot
}

// FirstWrappingSlot is the smallest slot whose address wraps,
// ceil(2^Bits / Stride), or -1 if none below 2^31 does.
func (ix StateIndex) FirstWrappingSlot() int64 {
	if ix.Bits >= 64 || ix.Stride <= 0 {
		return -1
	}
	m := uint64(1) << ix.Bits
	s := (m + uint64(ix.Stride) - 1) / uint64(ix.Stride)
	if s >= 1<<31 {
		return -1
	}
	return int64(s)
}
