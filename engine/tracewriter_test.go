package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"strings"
	"testing"

	"statesim/sched"
	"statesim/sim"
	"statesim/statecache"
	"statesim/step"
)

// The CUDA-graph fields appear only when set, so eager runs' traces keep
// their bytes (and their output hashes).
func TestTraceGraphFields(t *testing.T) {
	var buf bytes.Buffer
	tw := newTraceWriter(&buf)
	var rec step.Record
	r := rec.AddRow()
	r.StateBlocks = append(r.StateBlocks, 5)
	tw.step(&rec)
	r.Graph, r.KernelSlots = sched.GraphFull, append(r.KernelSlots, 3)
	tw.step(&rec)
	if err := tw.flush(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[2], `{"v":2,"end":{"scenario":"","seed":0,"steps":2,"rows":2,`) {
		t.Fatalf("want 2 lines and the closing record, got %q", buf.String())
	}
	if strings.Contains(lines[0], "graph") || strings.Contains(lines[0], "kernel_slots") {
		t.Errorf("eager row carries graph fields: %s", lines[0])
	}
	if !strings.Contains(lines[1], `"slots":[5],"graph":"full","kernel_slots":[3]}`) {
		t.Errorf("replayed row: %s", lines[1])
	}
}

// The hand-written writer matches encoding/json on random records: every
// digit count from 1 to 19, negatives, empty and nil lists, every region,
// path and graph, block copies, streams longer than one flush.
func TestTraceWriterMatchesJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 14))
	num := func() int64 {
		v := rng.Int64() >> rng.IntN(63) // every magnitude
		if rng.IntN(8) == 0 {
			v = -v
		}
		return v
	}
	slots := func() []int32 {
		s := make([]int32, rng.IntN(4))
		for i := range s {
			s[i] = int32(num())
		}
		return s
	}
	var got bytes.Buffer
	var want []byte
	steps, rows := 0, 0
	tw := newTraceWriter(&got)
	var rec step.Record
	for range 3000 {
		rec.Rows = rec.Rows[:0]
		rec.Step, rec.Start, rec.End = num(), sim.Time(num()), sim.Time(num())
		rec.NumScheduledTokens, rec.NumDecodes = int(num()), int(num())
		rec.Preempted = nil
		for range rng.IntN(3) {
			rec.Preempted = append(rec.Preempted, num())
		}
		rec.BlockCopies = rec.BlockCopies[:0]
		for range rng.IntN(3) {
			rec.BlockCopies = append(rec.BlockCopies, statecache.BlockCopy{Src: int32(num()), Dst: int32(num()), Group: int32(num()),
				Kind: statecache.CopyKind(rng.IntN(2)), Req: statecache.RequestID(num()), Tokens: int32(num())})
		}
		for range rng.IntN(6) {
			r := rec.AddRow()
			r.BatchIndex, r.RequestID = int(num()), num()
			r.NumScheduled, r.NumComputed, r.NumPrompt = int(num()), int(num()), int(num())
			r.Region, r.Path = sched.Region(rng.IntN(4)), sched.Path(rng.IntN(2))
			r.HasInitialState, r.Graph = rng.IntN(2) == 1, sched.Graph(rng.IntN(3))
			r.StateBlocks, r.KernelSlots = slots(), slots()
		}
		tw.step(&rec)
		want = append(want, referenceLine(&rec)...)
		steps, rows = steps+1, rows+len(rec.Rows)
	}
	if err := tw.flush(); err != nil {
		t.Fatal(err)
	}
	want = append(want, referenceClosing(want, steps, rows)...)
	if !bytes.Equal(got.Bytes(), want) {
		g, w := got.Bytes(), want
		i := 0
		for i < len(g) && i < len(w) && g[i] == w[i] {
			i++
		}
		t.Fatalf("differs from encoding/json at byte %d:\n got %.120s\nwant %.120s", i, g[i:], w[i:])
	}
}

// referenceClosing is the closing record by encoding/json and the
// standard library's CRC-32C of the lines before it.
func referenceClosing(before []byte, steps, rows int) []byte {
	type end struct {
		Scenario string `json:"scenario"`
		Seed     uint64 `json:"seed"`
		Steps    int    `json:"steps"`
		Rows     int    `json:"rows"`
		CRC32C   string `json:"crc32c"`
	}
	b, _ := json.Marshal(struct {
		V   int `json:"v"`
		End end `json:"end"`
	}{TraceVersion, end{"", 0, steps, rows, fmt.Sprintf("%08x", crc32.Checksum(before, crc32.MakeTable(crc32.Castagnoli)))}})
	return append(b, '\n')
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	f.n++
	return 0, errors.New("disk full")
}

// A write error stops the trace and flush reports it.
func TestTraceWriterError(t *testing.T) {
	f := &failWriter{}
	tw := newTraceWriter(f)
	var rec step.Record
	rec.AddRow().StateBlocks = make([]int32, 1<<15) // each line over traceFlushAt
	tw.step(&rec)
	tw.step(&rec)
	if err := tw.flush(); err == nil || f.n != 1 {
		t.Fatalf("flush: %v after %d writes, want disk full after 1", err, f.n)
	}
}
