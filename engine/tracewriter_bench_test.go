package engine

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"testing"

	"statesim/scenarios"
	"statesim/sched"
	"statesim/sim"
	"statesim/step"
)

// traceLine is one --trace line as encoding/json sees it: the reference
// the hand-written traceWriter must match byte for byte (docs/trace.md).
type traceLine struct {
	V                  int         `json:"v"`
	Step               int64       `json:"step"`
	StartNS            int64       `json:"start_ns"`
	EndNS              int64       `json:"end_ns"`
	NumScheduledTokens int         `json:"num_scheduled_tokens"`
	NumDecodes         int         `json:"num_decodes"`
	Preempted          []int64     `json:"preempted"`
	Rows               []traceRow  `json:"rows"`
	BlockCopies        []traceCopy `json:"block_copies,omitempty"`
}

type traceCopy struct {
	Src       int32  `json:"src"`
	Dst       int32  `json:"dst"`
	Group     int32  `json:"group"`
	Kind      string `json:"kind"`
	RequestID int64  `json:"request_id"`
	Tokens    int32  `json:"tokens"`
}

type traceRow struct {
	Row             int     `json:"row"`
	RequestID       int64   `json:"request_id"`
	Scheduled       int     `json:"scheduled"`
	Computed        int     `json:"computed"`
	Prompt          int     `json:"prompt"`
	Region          string  `json:"region"`
	Path            string  `json:"path"`
	HasInitialState bool    `json:"has_initial_state"`
	Slots           []int32 `json:"slots"`
	Graph           string  `json:"graph,omitempty"`
	KernelSlots     []int32 `json:"kernel_slots,omitempty"`
}

// referenceLine is rec's line through encoding/json.
func referenceLine(rec *step.Record) []byte {
	l := traceLine{V: TraceVersion, Step: rec.Step, StartNS: int64(rec.Start), EndNS: int64(rec.End),
		NumScheduledTokens: rec.NumScheduledTokens, NumDecodes: rec.NumDecodes,
		Preempted: append([]int64{}, rec.Preempted...), Rows: []traceRow{}}
	for i := range rec.Rows {
		r := &rec.Rows[i]
		tr := traceRow{Row: r.BatchIndex, RequestID: r.RequestID, Scheduled: r.NumScheduled,
			Computed: r.NumComputed, Prompt: r.NumPrompt, Region: r.Region.String(),
			Path: r.Path.String(), HasInitialState: r.HasInitialState,
			Slots: append([]int32{}, r.StateBlocks...), KernelSlots: r.KernelSlots}
		if r.Graph != sched.GraphEager {
			tr.Graph = r.Graph.String()
		}
		l.Rows = append(l.Rows, tr)
	}
	for _, c := range rec.BlockCopies {
		l.BlockCopies = append(l.BlockCopies, traceCopy{Src: c.Src, Dst: c.Dst, Group: c.Group,
			Kind: [...]string{"partial-hit", "producer"}[c.Kind], RequestID: int64(c.Req), Tokens: c.Tokens})
	}
	b, err := json.Marshal(&l)
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}

// tracedRecords runs a scenario with --trace and reads its lines back into
// step records, for the benchmark.
func tracedRecords(tb testing.TB, name string, sets ...string) ([]step.Record, []byte) {
	tb.Helper()
	sc, err := scenarios.Load(name, sets)
	if err != nil {
		tb.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := Run(sc, Options{Trace: &buf}); err != nil {
		tb.Fatal(err)
	}
	var recs []step.Record
	sc2 := bufio.NewScanner(bytes.NewReader(buf.Bytes()))
	sc2.Buffer(nil, 1<<24)
	for sc2.Scan() {
		var l traceLine
		if err := json.Unmarshal(sc2.Bytes(), &l); err != nil {
			tb.Fatal(err)
		}
		rec := step.Record{Step: l.Step, NumScheduledTokens: l.NumScheduledTokens,
			NumDecodes: l.NumDecodes, Preempted: l.Preempted}
		rec.Start, rec.End = sim.Time(l.StartNS), sim.Time(l.EndNS)
		for _, tr := range l.Rows {
			r := rec.AddRow()
			r.BatchIndex, r.RequestID, r.NumScheduled, r.NumComputed, r.NumPrompt =
				tr.Row, tr.RequestID, tr.Scheduled, tr.Computed, tr.Prompt
			r.Region = sched.Region(index(tb, tr.Region, "decode", "short-extend", "extend", "prefill"))
			r.Path = sched.Path(index(tb, tr.Path, "prefill", "decode"))
			r.Graph = sched.Graph(index(tb, tr.Graph, "", "piecewise", "full"))
			r.HasInitialState, r.StateBlocks, r.KernelSlots = tr.HasInitialState, tr.Slots, tr.KernelSlots
		}
		recs = append(recs, rec)
	}
	if err := sc2.Err(); err != nil {
		tb.Fatal(err)
	}
	return recs, buf.Bytes()
}

func index(tb testing.TB, s string, names ...string) int {
	for i, n := range names {
		if s == n {
			return i
		}
	}
	tb.Fatalf("unknown trace label %q", s)
	return 0
}

// BenchmarkTraceWriter writes the imposter scenario's steps (records read
// back from its own trace) into io.Discard: the writer alone.
func BenchmarkTraceWriter(b *testing.B) {
	recs, trace := tracedRecords(b, "imposter")
	b.SetBytes(int64(len(trace)))
	b.ReportAllocs()
	for b.Loop() {
		tw := newTraceWriter(io.Discard)
		for i := range recs {
			tw.step(&recs[i])
		}
		if err := tw.flush(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(b.N*len(recs)), "ns/step")
}
