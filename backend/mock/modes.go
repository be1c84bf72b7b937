package mock

import (
	"fmt"

	"statesim/backend"
)

// The Mamba cache modes (align, all) under prefix caching: the symbolic
// backend decides which block each state comes from and where it goes
// (backend.StatePlan); the mock moves the bytes, so a restore from the
// wrong block reads the wrong numbers (docs/numeric-model.md §8).

// rowOps are the plan's operations for one row, by kind.
type rowOps struct {
	copies, bounds []backend.StateOp
}

// planRow takes the operations of row i (the plan lists rows in order,
// from *next on) into j: its copies and boundaries, and the columns an
// align-mode speculative row writes, read from column 0.
func (m *Mock) planRow(j *rowJob, i int, next *int) error {
	ops := m.plan.Ops
	for ; *next < len(ops) && ops[*next].Row < i; *next++ {
	}
	var cols [][]int32
	for ; *next < len(ops) && ops[*next].Row == i; *next++ {
		op := ops[*next]
		switch op.Kind {
		case backend.OpCopy:
			j.ops.copies = append(j.ops.copies, op)
		case backend.OpBoundary:
			j.ops.bounds = append(j.ops.bounds, op)
		case backend.OpColumns:
			for len(cols) <= op.Group {
				cols = append(cols, nil)
			}
			cols[op.Group] = op.Cols
		}
	}
	if j.kern != nil && (len(j.ops.copies)+len(j.ops.bounds) > 0 || cols != nil) {
		return fmt.Errorf("mock: a Mamba cache mode's state copies with device state kernels are not modelled")
	}
	if cols == nil {
		return nil
	}
	k := len(cols[0]) - 1
	slots, spec := make([]int32, len(cols)), make([]int32, 0, len(cols)*k)
	for g, c := range cols {
		if len(c) != k+1 {
			return fmt.Errorf("mock: Mamba group %d has %d state columns, group 0 %d", g, len(c), k+1)
		}
		slots[g] = c[0]
		spec = append(spec, c[1:]...)
	}
	j.slots, j.spec, j.specK, j.acc = slots, spec, k, 0
	return nil
}

// copyState performs group g's copies into this layer's tensor: the
// recurrent state [stateOff, stateOff+stateN) from Src, the conv window
// (convN elements of convCols columns of width cd) from ConvSrc at column
// ConvOff where the kind keeps its conv columns in the first column's
// block (specConv), else from Src.
func (m *net) copyState(tensor *cache, g int, j *rowJob, convN int, cd int, specConv bool) error {
	geo := &m.geo
	for _, op := range j.ops.copies {
		if op.Group != g {
			continue
		}
		dst, err := m.page(tensor, op.Dst)
		if err != nil {
			return err
		}
		src, err := m.pageOf(tensor, op.Src, true)
		if err != nil {
			return err
		}
		convSrc, off := src, 0
		if specConv {
			if convSrc, err = m.pageOf(tensor, op.ConvSrc, true); err != nil {
				return err
			}
			off = op.ConvOff * cd
		}
		copy(dst[geo.StateOffset:geo.StateOffset+geo.StateElems], src[geo.StateOffset:geo.StateOffset+geo.StateElems])
		copy(dst[:convN], convSrc[off:off+convN])
	}
	return nil
}

// boundary stores group g's state after token i of the row (conv window
// conv, recurrent state S) where all mode caches a block boundary there.
func (m *net) boundary(tensor *cache, g int, j *rowJob, i int, conv, S []float32) error {
	for _, op := range j.ops.bounds {
		if op.Group != g || op.Tokens != j.start+i+1 {
			continue
		}
		dst, err := m.page(tensor, op.Dst)
		if err != nil {
			return err
		}
		copy(dst[:len(conv)], conv)
		copy(dst[m.geo.StateOffset:m.geo.StateOffset+int64(len(S))], S)
	}
	return nil
}

// applyPost performs the copies that follow a step (align mode's
// boundary copy), in every state layer's tensor, and forgets them.
func (m *Mock) applyPost() error {
	if len(m.plan.Post) == 0 {
		return nil
	}
	j := &rowJob{ops: rowOps{copies: m.plan.Post}}
	for li := range m.w.Layers {
		lw := &m.w.Layers[li]
		tensor := m.tensors[m.geo.LayerTensor[li]]
		var err error
		switch {
		case lw.State != nil:
			d := &lw.State.Dims
			err = m.net.copyState(tensor, m.geo.LayerGroup[li], j, convWindow(d)*d.ConvDim, d.ConvDim, d.SpecConvColumns)
		case lw.Mamba != nil:
			err = m.net.copyState(tensor, m.geo.LayerGroup[li], j, int(m.geo.ConvElems), 0, false)
		}
		if err != nil {
			return fmt.Errorf("mock: boundary copy: %w", err)
		}
	}
	m.plan.Post = m.plan.Post[:0]
	return nil
}

// convWindow is the K − 1 conv columns a state kind's kernel reads.
func convWindow(d *Dims) int {
	if d.ConvK <= 1 {
		return 0
	}
	return d.ConvK - 1
}
