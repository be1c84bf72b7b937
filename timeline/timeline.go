package timeline

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"

	"statesim"
	"statesim/check"
	"statesim/sched"
)

// Process ids: the scheduler and the requests are two "processes" so that
// Perfetto groups the request tracks together.
const (
	pidScheduler = 1
	pidRequests  = 2
	tidSteps     = 1
)

// event is one trace event. Dur is set on complete ("X") events only.
type event struct {
	Name  string         `json:"name"`
	Cat   string         `json:"cat,omitempty"`
	Ph    string         `json:"ph"`
	Ts    json.Number    `json:"ts"`
	Dur   json.Number    `json:"dur,omitempty"`
	Pid   int            `json:"pid"`
	Tid   int64          `json:"tid"`
	S     string         `json:"s,omitempty"`
	Cname string         `json:"cname,omitempty"`
	Args  map[string]any `json:"args,omitempty"`
}

// tid is a request's track: its id + 1, since tid 0 reads as a
// process's main thread in some viewers.
func tid(id int64) int64 { return id + 1 }

// us turns simulated nanoseconds into the format's microseconds.
func us(ns int64) json.Number {
	return json.Number(strconv.FormatFloat(float64(ns)/1e3, 'f', 3, 64))
}

// request is what the writer remembers of a live request.
type request struct {
	queuedSince int64 // ns; -1 when not queued
	// The open decode span, if decSteps > 0.
	decStart, decEnd int64
	decSteps         int64
	decTokens        int64
	lastStep         int64
}

// Writer streams a timeline to an io.Writer; feed it from
// statesim.Options.OnStep and OnFinish, then call Close.
type Writer struct {
	w     *bufio.Writer
	n     int
	err   error
	live  map[int64]*request
	seen  []int64 // request ids in order of first appearance
	end   int64   // latest time written
	steps int64
}

// New starts a timeline on w.
func New(w io.Writer) *Writer {
	t := &Writer{w: bufio.NewWriterSize(w, 1<<16), live: map[int64]*request{}}
	t.raw(`{"displayTimeUnit":"ms","traceEvents":[` + "\n")
	return t
}

func (t *Writer) raw(s string) {
	if t.err == nil {
		_, t.err = t.w.WriteString(s)
	}
}

func (t *Writer) emit(e event) {
	b, err := json.Marshal(e)
	if err != nil && t.err == nil {
		t.err = err
		return
	}
	if t.n > 0 {
		t.raw(",\n")
	}
	t.n++
	t.raw(string(b))
}

func (t *Writer) span(pid int, tid int64, name, cat string, start, end int64, args map[string]any) {
	t.emit(event{Name: name, Cat: cat, Ph: "X", Ts: us(start), Dur: us(max(0, end-start)), Pid: pid, Tid: tid, Args: args})
}

func (t *Writer) instant(pid int, tid int64, name, cname string, at int64, args map[string]any) {
	t.emit(event{Name: name, Ph: "i", S: "t", Ts: us(at), Pid: pid, Tid: tid, Cname: cname, Args: args})
}

func (t *Writer) req(q *sched.Request) *request {
	id := int64(q.ID)
	r, ok := t.live[id]
	if !ok {
		r = &request{queuedSince: int64(q.ArrivalTime), lastStep: -2}
		t.live[id] = r
		t.seen = append(t.seen, id)
	}
	return r
}

// closeDecode ends the request's open decode span.
func (t *Writer) closeDecode(id int64, r *request) {
	if r.decSteps == 0 {
		return
	}
	t.span(pidRequests, tid(id), "decode", "decode", r.decStart, r.decEnd,
		map[string]any{"steps": r.decSteps, "tokens": r.decTokens})
	r.decSteps, r.decTokens = 0, 0
}

// OnStep records one executed step.
func (t *Writer) OnStep(e *statesim.StepEvent) {
	start, end := int64(e.Start), int64(e.End)
	t.end = max(t.end, end)
	t.steps++
	out := e.Out
	for _, q := range out.Preempted {
		id := int64(q.ID)
		r := t.req(q)
		t.closeDecode(id, r)
		t.instant(pidRequests, tid(id), "preempted", "bad", start, map[string]any{"step": out.Step})
		r.queuedSince = start
	}
	var decode, extend, prefill, cut int
	for i := range out.Rows {
		row := &out.Rows[i]
		q := row.Req
		id := int64(q.ID)
		r := t.req(q)
		if r.queuedSince >= 0 {
			t.span(pidRequests, tid(id), "queued", "queued", r.queuedSince, start, nil)
			r.queuedSince = -1
		}
		if row.NumComputed >= q.NumPromptTokens {
			decode += row.NumScheduled
			if r.decSteps > 0 && r.lastStep != out.Step-1 {
				t.closeDecode(id, r)
			}
			if r.decSteps == 0 {
				r.decStart = start
			}
			r.decEnd = end
			r.decSteps++
			r.decTokens += int64(row.NumScheduled)
			r.lastStep = out.Step
			continue
		}
		t.closeDecode(id, r)
		r.lastStep = out.Step
		name := "prefill chunk"
		switch {
		case row.NumComputed > 0:
			extend += row.NumScheduled
		case row.NumScheduled < q.NumPromptTokens:
			cut += row.NumScheduled
		default:
			prefill += row.NumScheduled
		}
		t.span(pidRequests, tid(id), name, "prefill", start, end, map[string]any{
			"step": out.Step, "tokens": row.NumScheduled, "num_computed_tokens": row.NumComputed,
			"prompt_tokens": q.NumPromptTokens, "region": row.Region.String(), "mamba_path": row.Path.String()})
		if row.NumComputed == 0 && row.Path == sched.PathDecode && len(q.Blocks.Mamba) > 0 {
			t.instant(pidRequests, tid(id), "new request on the Mamba decode path", "terrible", start,
				map[string]any{"step": out.Step, "tokens": row.NumScheduled, "slot": q.Blocks.Mamba[0]})
		}
	}
	t.span(pidScheduler, tidSteps, "step "+strconv.FormatInt(out.Step, 10), "step", start, end, map[string]any{
		"rows": len(out.Rows), "tokens": out.NumScheduledTokens, "decode_rows": out.NumDecodes, "preempted": len(out.Preempted)})
	t.emit(event{Name: "token budget", Ph: "C", Ts: us(start), Pid: pidScheduler, Tid: tidSteps,
		Args: map[string]any{"decode": decode, "extend": extend, "prefill": prefill, "new request cut": cut}})
	if s := e.Sched; s != nil {
		t.emit(event{Name: "queues", Ph: "C", Ts: us(start), Pid: pidScheduler, Tid: tidSteps,
			Args: map[string]any{"waiting": len(s.Waiting), "running": len(s.Running)}})
	}
}

// OnFinish closes a finished request's track.
func (t *Writer) OnFinish(q *sched.Request) {
	id := int64(q.ID)
	r, ok := t.live[id]
	if !ok {
		return
	}
	t.closeDecode(id, r)
	t.instant(pidRequests, tid(id), "finished", "good", int64(q.FinishTime), map[string]any{"output_tokens": q.NumOutputTokens})
	delete(t.live, id)
}

// Violations marks invariant violations (a report's kept ones) on their
// request's track, or on the scheduler's when they name no request.
func (t *Writer) Violations(vs []check.Violation) {
	for _, v := range vs {
		pid, track := pidRequests, tid(v.RequestID)
		if v.RequestID < 0 {
			pid, track = pidScheduler, tidSteps
		}
		t.instant(pid, track, v.Name, "terrible", v.TimeNS, map[string]any{"step": v.Step, "detail": v.Detail})
	}
}

// Close ends open spans, names the tracks and finishes the JSON; it
// returns the first write error.
func (t *Writer) Close() error {
	ids := make([]int64, 0, len(t.live))
	for id := range t.live {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		r := t.live[id]
		t.closeDecode(id, r)
		if r.queuedSince >= 0 {
			t.span(pidRequests, tid(id), "queued (never scheduled)", "queued", r.queuedSince, t.end, nil)
		}
	}
	meta := func(pid int, track int64, name string, args map[string]any) {
		t.emit(event{Name: name, Ph: "M", Ts: "0", Pid: pid, Tid: track, Args: args})
	}
	meta(pidScheduler, 0, "process_name", map[string]any{"name": "scheduler"})
	meta(pidScheduler, tidSteps, "thread_name", map[string]any{"name": "steps"})
	meta(pidRequests, 0, "process_name", map[string]any{"name": "requests"})
	seen := append([]int64(nil), t.seen...)
	sort.Slice(seen, func(i, j int) bool { return seen[i] < seen[j] })
	for _, id := range seen {
		meta(pidRequests, tid(id), "thread_name", map[string]any{"name": fmt.Sprintf("request %d", id)})
		meta(pidRequests, tid(id), "thread_sort_index", map[string]any{"sort_index": id})
	}
	t.raw("\n]}\n")
	if t.err == nil {
		t.err = t.w.Flush()
	}
	return t.err
}
