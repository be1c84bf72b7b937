package statecache

import (
	"runtime"
	"testing"
	"unsafe"

	"statesim/model"
)

// HostBytesPerBlock is what a pool and the symbolic backend's records
// really cost per block: measured, so the memory estimate cannot drift
// from the allocations it stands for. The records are allocated only for
// the blocks used.
func TestHostBytesPerBlock(t *testing.T) {
	const n = 1 << 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	pool := NewBlockPoolWith(n, PoolOptions{})
	ps := NewProvenances(n)
	runtime.ReadMemStats(&after)
	per := float64(after.TotalAlloc-before.TotalAlloc) / n
	t.Logf("%.1f bytes per block up front", per)
	if per < 0.9*HostBytesPerBlock || per > 1.1*HostBytesPerBlock {
		t.Errorf("a block costs %.1f bytes of host memory up front, HostBytesPerBlock says %d: update it", per, HostBytesPerBlock)
	}
	// Touching the first 100k blocks allocates their records, not the
	// other 900k blocks'.
	runtime.ReadMemStats(&before)
	for b := int32(1); b < 100_000; b++ {
		ps.WriteState(b, 7, 3, 1, false)
	}
	runtime.ReadMemStats(&after)
	used := float64(after.TotalAlloc - before.TotalAlloc)
	if lo, hi := 100_000*RecordBytesPerBlock*0.95, 101_376*RecordBytesPerBlock*1.05; used < lo || used > hi {
		t.Errorf("records of 100k blocks cost %.0f bytes, want about %d", used, 100_000*RecordBytesPerBlock)
	}
	if got := ps.RecordBytes(); got != int64(used) && (float64(got) < 0.95*used || float64(got) > 1.05*used) {
		t.Errorf("RecordBytes %d, allocated %.0f", got, used)
	}
	if p := ps.Get(900_000); p.Writer != NoRequest || p.Content != Zero {
		t.Errorf("an untouched block reads %+v, want zero", p)
	}
	runtime.KeepAlive(pool)
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

// The records' sizes that the constants and layouts rely on: a pool
// record fills one cache line (kvCacheBlockBytes, PrefixCachingHostBytes),
// a provenance is two to a line (recordPage) and costs its size plus the
// lease owner's pointer (RecordBytesPerBlock).
func TestKVCacheBlockSize(t *testing.T) {
	if got := unsafe.Sizeof(kvCacheBlock{}); got != kvCacheBlockBytes || kvCacheBlockBytes != 64 {
		t.Errorf("kvCacheBlock is %d bytes; kvCacheBlockBytes says %d, a cache line is 64", got, kvCacheBlockBytes)
	}
	if got := unsafe.Sizeof(Provenance{}); got != 32 {
		t.Errorf("Provenance is %d bytes, want 32 (two to a cache line)", got)
	}
	if got := unsafe.Sizeof(Provenance{}) + unsafe.Sizeof((*BlockTable)(nil)); got != RecordBytesPerBlock {
		t.Errorf("a provenance and its owner are %d bytes, RecordBytesPerBlock says %d", got, RecordBytesPerBlock)
	}
}
