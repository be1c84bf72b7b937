package plot

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"statesim/invariant"
	"statesim/sched"
	"statesim/step"
)

// traceStep is one line of `statesim run --trace` (see engine/tracewriter.go).
type traceStep struct {
	// V is the schema version (engine.TraceVersion); absent in version 1.
	V         int     `json:"v"`
	Step      *int64  `json:"step"`
	StartNS   int64   `json:"start_ns"`
	EndNS     int64   `json:"end_ns"`
	Preempted []int64 `json:"preempted"`
	Rows      []struct {
		RequestID int64   `json:"request_id"`
		Scheduled int     `json:"scheduled"`
		Computed  int     `json:"computed"`
		Prompt    int     `json:"prompt"`
		Path      string  `json:"path"`
		Slots     []int64 `json:"slots"`
	} `json:"rows"`
}

// MaxTraceLine bounds one --trace line, so a file without newlines (say
// /dev/zero) is refused instead of read whole: a step's line is about 180
// bytes a row, so 16 MiB holds a step of some 90,000 rows, above any
// max_num_seqs vLLM runs. A variable for tests.
var MaxTraceLine = 16 << 20

// maxTraceVersion is the newest --trace schema this reader knows; every
// field it reads means the same in versions 1 and 2.
const maxTraceVersion = 2

// ReadTrace rebuilds the per-step series a --trace file carries: the
// token split, budget cuts, rows, preemptions, the slots of scheduled
// requests and the highest slot touched, and the one invariant visible
// in rows (a request with no computed tokens on the Mamba decode path).
// Waiting queue, block pool and latencies are not in the trace and stay
// unknown (-1 / empty).
func ReadTrace(rd io.Reader, name string) (*Run, error) {
	run := &Run{Name: name, FirstWrappingSlot: -1, FromTrace: true}
	br := bufio.NewReader(rd)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		return nil, fmt.Errorf("gzip-compressed: plot --trace reads the file run --trace wrote (gunzip it first)")
	}
	sc := bufio.NewScanner(br)
	// +1: the newline is buffered with its line.
	sc.Buffer(make([]byte, 0, min(64<<10, MaxTraceLine+1)), MaxTraceLine+1)
	line := 0
	var highest int64
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(b) == 0 {
			continue
		}
		var ts traceStep
		if err := json.Unmarshal(b, &ts); err != nil {
			return nil, fmt.Errorf("line %d: not a statesim trace step: %v", line, err)
		}
		if ts.V > maxTraceVersion {
			return nil, fmt.Errorf("line %d: trace schema version %d is newer than this statesim reads (%d): use the statesim that wrote it", line, ts.V, maxTraceVersion)
		}
		if ts.Step == nil {
			return nil, fmt.Errorf("line %d: not a statesim trace step: no \"step\" field", line)
		}
		st := Step{Step: *ts.Step, StartNS: ts.StartNS, EndNS: ts.EndNS, Rows: int32(len(ts.Rows)), Preempted: int32(len(ts.Preempted)),
			Waiting: -1, Running: -1, BlocksHeld: -1, FreeQueue: -1}
		for _, r := range ts.Rows {
			st.addRow(&step.Row{NumScheduled: r.Scheduled, NumComputed: r.Computed, NumPrompt: r.Prompt, Kind: sched.RowKind(r.Scheduled, r.Computed, r.Prompt)})
			if r.Computed == 0 && r.Path == "decode" {
				st.Violations[invariant.NoDecodeBeforePrefill]++
			}
			st.SlotsHeld += int32(len(r.Slots))
			for _, s := range r.Slots {
				highest = max(highest, s)
			}
		}
		st.HighestSlot = int32(highest)
		run.add(&st)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("line %d: longer than %d MiB, the most a --trace line may hold", line+1, MaxTraceLine>>20)
		}
		return nil, fmt.Errorf("line %d: %v", line+1, err)
	}
	if run.NumSteps == 0 {
		return nil, fmt.Errorf("no steps: empty trace")
	}
	return run, nil
}
