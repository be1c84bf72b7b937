package engine

import (
	"bufio"
	"io"
	"strconv"

	"statesim/sched"
	"statesim/step"
)

// TraceVersion is the --trace schema version, the "v" of every line
// (docs/trace.md). 1 was the unversioned layout before rows carried their
// persistent-batch "row"; bump it whenever a field changes meaning or goes.
const TraceVersion = 2

// traceWriter writes one JSON object per executed step, by hand: it runs
// on every step, so it avoids reflection and allocation.
//
//	{"v":2,"step":3,"start_ns":..,"end_ns":..,"num_scheduled_tokens":..,"num_decodes":..,
//	 "preempted":[..],"rows":[{"row":0,"request_id":..,"scheduled":..,"computed":..,
//	 "prompt":..,"region":"decode","path":"decode","has_initial_state":true,"slots":[..]}]}
//
// rows are in the model runner's order: "row" is the row of the persistent
// input batch (after condense and the reorder), so rows[:num_decodes] take
// the Mamba decode path. region is decode, short-extend (four-region
// reorder only), extend or prefill. A row dispatched to a CUDA graph adds
// "graph" (piecewise or full; left out when eager), and one whose replayed
// kernel addresses other slots than its own adds "kernel_slots" (the same
// length as "slots"): both are additions, so TraceVersion stays. A step
// that scheduled nothing runs no model and writes no line; its step
// number is skipped.
type traceWriter struct {
	w   *bufio.Writer
	buf []byte
}

func newTraceWriter(w io.Writer) *traceWriter {
	return &traceWriter{w: bufio.NewWriterSize(w, 1<<16)}
}

func (t *traceWriter) step(out *step.Record) {
	b := t.buf[:0]
	b = append(b, `{"v":`...)
	b = strconv.AppendInt(b, TraceVersion, 10)
	b = append(b, `,"step":`...)
	b = strconv.AppendInt(b, out.Step, 10)
	b = append(b, `,"start_ns":`...)
	b = strconv.AppendInt(b, int64(out.Start), 10)
	b = append(b, `,"end_ns":`...)
	b = strconv.AppendInt(b, int64(out.End), 10)
	b = append(b, `,"num_scheduled_tokens":`...)
	b = strconv.AppendInt(b, int64(out.NumScheduledTokens), 10)
	b = append(b, `,"num_decodes":`...)
	b = strconv.AppendInt(b, int64(out.NumDecodes), 10)
	b = append(b, `,"preempted":[`...)
	for i, id := range out.Preempted {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	b = append(b, `],"rows":[`...)
	for i := range out.Rows {
		row := &out.Rows[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"row":`...)
		b = strconv.AppendInt(b, int64(row.BatchIndex), 10)
		b = append(b, `,"request_id":`...)
		b = strconv.AppendInt(b, row.RequestID, 10)
		b = append(b, `,"scheduled":`...)
		b = strconv.AppendInt(b, int64(row.NumScheduled), 10)
		b = append(b, `,"computed":`...)
		b = strconv.AppendInt(b, int64(row.NumComputed), 10)
		b = append(b, `,"prompt":`...)
		b = strconv.AppendInt(b, int64(row.NumPrompt), 10)
		b = append(b, `,"region":"`...)
		b = append(b, row.Region.String()...)
		b = append(b, `","path":"`...)
		b = append(b, row.Path.String()...)
		b = append(b, `","has_initial_state":`...)
		b = strconv.AppendBool(b, row.HasInitialState)
		b = append(b, `,"slots":`...)
		b = appendSlots(b, row.StateBlocks)
		if row.Graph != sched.GraphEager { // left out when eager, so older traces stay byte-identical
			b = append(b, `,"graph":"`...)
			b = append(b, row.Graph.String()...)
			b = append(b, '"')
		}
		if len(row.KernelSlots) > 0 {
			b = append(b, `,"kernel_slots":`...)
			b = appendSlots(b, row.KernelSlots)
		}
		b = append(b, '}')
	}
	b = append(b, "]}\n"...)
	t.buf = b
	t.w.Write(b)
}

// appendSlots appends slots as a JSON array.
func appendSlots(b []byte, slots []int32) []byte {
	b = append(b, '[')
	for j, s := range slots {
		if j > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(s), 10)
	}
	return append(b, ']')
}

func (t *traceWriter) flush() error { return t.w.Flush() }
