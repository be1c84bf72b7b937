package plot

import (
	"bufio"
	"encoding/json"
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
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 1<<20), 1<<30)
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
		return nil, fmt.Errorf("line %d: %v", line+1, err)
	}
	if run.NumSteps == 0 {
		return nil, fmt.Errorf("no steps: empty trace")
	}
	return run, nil
}
