package statecache

import (
	"runtime"
	"testing"

	"statesim/model"
)

// HostBytesPerBlock is what a pool and the symbolic backend's records
// really cost per block: measured, so the memory estimate cannot drift
// from the allocations it stands for.
func TestHostBytesPerBlock(t *testing.T) {
	const n = 1 << 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	pool := NewBlockPool(n)
	ps := NewProvenances(n)
	ps.owner = make([]*BlockTable, n) // allocated on the first lease
	runtime.ReadMemStats(&after)
	per := float64(after.TotalAlloc-before.TotalAlloc) / n
	runtime.KeepAlive(pool)
	runtime.KeepAlive(ps)
	t.Logf("%.1f bytes per block", per)
	if per < 0.9*HostBytesPerBlock || per > 1.1*HostBytesPerBlock {
		t.Errorf("a block costs %.1f bytes of host memory, HostBytesPerBlock says %d: update it", per, HostBytesPerBlock)
	}
}

func TestMaxModelLenFits(t *testing.T) {
	s, err := model.Preset("tiny-hybrid")
	if err != nil {
		t.Fatal(err)
	}
	lay := s.Layout(16)
	l := &lay
	na, nm := int64(l.NumAttnGroups()), int64(l.NumMambaGroups())
	blocks := int(1 + nm + na*10) // block 0, the state slots, 10 KV blocks
	need, longest := MaxModelLenFits(l, blocks, 10*l.BlockSize)
	if need != nm+na*10 || longest != int64(10*l.BlockSize) {
		t.Errorf("need %d, longest %d", need, longest)
	}
	if need, _ := MaxModelLenFits(l, blocks, 10*l.BlockSize+1); need != nm+na*11 {
		t.Errorf("one token over a block: need %d", need)
	}
	if _, longest := MaxModelLenFits(l, int(nm), 1); longest != 0 {
		t.Errorf("a pool without room for the state slots: longest %d", longest)
	}
}
