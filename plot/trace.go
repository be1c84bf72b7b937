package plot

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"statesim/invariant"
	"statesim/sched"
	"statesim/step"
)

// traceStep is one line of `statesim run --trace` (see engine/tracewriter.go).
type traceStep struct {
	// V is the schema version (engine.TraceVersion); absent in version 1.
	V    int    `json:"v"`
	Step *int64 `json:"step"`
	// End is set on the closing record only.
	End       *traceEnd `json:"end"`
	StartNS   int64     `json:"start_ns"`
	EndNS     int64     `json:"end_ns"`
	Preempted []int64   `json:"preempted"`
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

// traceEnd is the closing record (engine/tracewriter.go): the step lines
// and rows before it and the CRC-32C of their bytes.
type traceEnd struct {
	Scenario string `json:"scenario"`
	Seed     uint64 `json:"seed"`
	Steps    *int64 `json:"steps"`
	Rows     *int64 `json:"rows"`
	CRC32C   string `json:"crc32c"`
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ReadTrace rebuilds the per-step series a --trace file carries: the
// token split, budget cuts, rows, preemptions, the slots of scheduled
// requests and the highest slot touched, and the one invariant visible
// in rows (a request with no computed tokens on the Mamba decode path).
// Waiting queue, block pool and latencies are not in the trace and stay
// unknown (-1 / empty).
//
// The file must be whole and as written: it ends with the closing record,
// whose counts and checksum match the lines before it (a trace cut at a
// line boundary, by a killed run or by hand, is refused), its steps
// increase, its times run forward and its counts and slots are not
// negative.
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
	var highest, rows, prevStart int64
	order := stepOrder{lastRun: -1, lastEmpty: -1}
	var crc uint32
	var end *traceEnd
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if end != nil {
			return nil, fmt.Errorf("line %d: after the closing record (line %d): the trace ends there", line, line-1)
		}
		if len(b) == 0 {
			return nil, fmt.Errorf("line %d: empty line: not a statesim trace step", line)
		}
		var ts traceStep
		if err := json.Unmarshal(b, &ts); err != nil {
			return nil, fmt.Errorf("line %d: not a statesim trace step: %v", line, err)
		}
		if ts.V > maxTraceVersion {
			return nil, fmt.Errorf("line %d: trace schema version %d is newer than this statesim reads (%d): use the statesim that wrote it", line, ts.V, maxTraceVersion)
		}
		if ts.End != nil {
			end = ts.End
			if err := checkEnd(end, run.NumSteps, rows, crc); err != nil {
				return nil, fmt.Errorf("line %d: closing record: %v", line, err)
			}
			run.TraceScenario, run.TraceSeed = end.Scenario, end.Seed
			continue
		}
		if ts.Step == nil {
			return nil, fmt.Errorf("line %d: not a statesim trace step: no \"step\" field", line)
		}
		if err := checkStep(&ts, &order, run.NumSteps > 0, prevStart); err != nil {
			return nil, fmt.Errorf("line %d: step %d: %v", line, *ts.Step, err)
		}
		crc = crc32.Update(crc32.Update(crc, castagnoli, b), castagnoli, newline)
		prevStart = ts.StartNS
		rows += int64(len(ts.Rows))
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
		st.HighestSlot = highest
		run.add(&st)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("line %d: longer than %d MiB, the most a --trace line may hold", line+1, MaxTraceLine>>20)
		}
		return nil, fmt.Errorf("line %d: %v", line+1, err)
	}
	if line == 0 {
		return nil, fmt.Errorf("no steps: empty trace")
	}
	if end == nil {
		return nil, fmt.Errorf("no closing record after line %d: the trace is cut short (a run killed or a file truncated) or older than the closing record; rerun statesim run --trace", line)
	}
	if run.NumSteps == 0 {
		return nil, fmt.Errorf("no steps: the run scheduled nothing")
	}
	return run, nil
}

var newline = []byte{'\n'}

// stepOrder is the order run --trace writes steps in: a step that ran
// rows is written when it ends, in increasing step order; a step that
// scheduled nothing is written when it is scheduled, which under async
// scheduling is before the step in flight ends. So the two kinds each
// increase, an empty step comes after every ran step before it, and no
// number comes twice (pending: empty steps ahead of the last ran one).
type stepOrder struct {
	lastRun, lastEmpty int64
	pending            []int64
}

func (o *stepOrder) next(step int64, empty bool) error {
	if step <= o.lastRun || empty && step <= o.lastEmpty {
		return fmt.Errorf("after step %d: steps must increase", max(o.lastRun, o.lastEmpty))
	}
	if empty {
		o.lastEmpty = step
		o.pending = append(o.pending, step)
		return nil
	}
	keep := o.pending[:0]
	for _, p := range o.pending {
		if p == step {
			return fmt.Errorf("step %d twice", step)
		}
		if p > step {
			keep = append(keep, p)
		}
	}
	o.pending, o.lastRun = keep, step
	return nil
}

// checkStep refuses a step line no run writes: steps out of order or
// repeated, time running backwards, negative counts or slots.
func checkStep(ts *traceStep, order *stepOrder, hasPrev bool, prevStart int64) error {
	if *ts.Step < 0 {
		return errors.New("a negative step number")
	}
	if err := order.next(*ts.Step, len(ts.Rows) == 0); err != nil {
		return err
	}
	switch {
	case ts.StartNS < 0 || ts.EndNS < ts.StartNS:
		return fmt.Errorf("start_ns %d, end_ns %d: times must be >= 0 and a step end after it starts", ts.StartNS, ts.EndNS)
	case hasPrev && ts.StartNS < prevStart:
		return fmt.Errorf("starts at %d ns, before the previous step (%d ns)", ts.StartNS, prevStart)
	}
	for i, r := range ts.Rows {
		if r.Scheduled < 0 || r.Computed < 0 || r.Prompt < 0 || r.RequestID < 0 {
			return fmt.Errorf("row %d: negative request id or token count", i)
		}
		for _, s := range r.Slots {
			if s < -1 { // -1: no slot
				return fmt.Errorf("row %d: slot %d", i, s)
			}
		}
	}
	return nil
}

// checkEnd compares the closing record with what was read before it.
func checkEnd(e *traceEnd, steps, rows int64, crc uint32) error {
	if e.Steps == nil || e.Rows == nil || e.CRC32C == "" {
		return errors.New("want steps, rows and crc32c")
	}
	if *e.Steps != steps || *e.Rows != rows {
		return fmt.Errorf("says %d steps and %d rows, the file has %d and %d: lines are missing or added", *e.Steps, *e.Rows, steps, rows)
	}
	if want := fmt.Sprintf("%08x", crc); e.CRC32C != want {
		return fmt.Errorf("checksum %s, the lines before it sum to %s: the file was changed after it was written", e.CRC32C, want)
	}
	return nil
}
