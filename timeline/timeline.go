package timeline

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"

	"statesim/invariant"
	"statesim/sched"
	"statesim/step"
)

// Process ids: the scheduler and the requests are two "processes" so that
// Perfetto groups the request tracks together.
const (
	pidScheduler = 1
	pidRequests  = 2
	tidSteps     = 1
)

// arg is one key of an event's args: an integer, or a string when isStr.
type arg struct {
	k     string
	i     int64
	s     string
	isStr bool
}

func num(k string, v int64) arg                        { return arg{k: k, i: v} }
func str(k, v string) arg                              { return arg{k: k, s: v, isStr: true} }
func inum[T ~int | ~int32 | ~int64](k string, v T) arg { return num(k, int64(v)) }

// tid is a request's track: its id + 1, since tid 0 reads as a
// process's main thread in some viewers.
func tid(id int64) int64 { return id + 1 }

// appendUS writes simulated nanoseconds as the format's microseconds with
// three decimals, exactly (no floating point).
func appendUS(b []byte, ns int64) []byte {
	ns = max(ns, 0)
	b = strconv.AppendInt(b, ns/1000, 10)
	f := ns % 1000
	return append(b, '.', byte('0'+f/100), byte('0'+f/10%10), byte('0'+f%10))
}

// appendString writes a JSON string; plain ASCII goes straight through.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
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

// decodeSteps is an open run of consecutive decode-only steps.
type decodeSteps struct {
	start, end    int64
	first, last   int64
	steps, tokens int64
	maxRows       int64
}

// Writer streams a timeline to an io.Writer; feed it the engine's step
// records (engine.Options.Observe = w.Observe), then call Close.
type Writer struct {
	w    *bufio.Writer
	buf  []byte
	n    int
	err  error
	live map[int64]*request
	seen []int64 // request ids in order of first appearance
	end  int64   // latest time written
	dec  decodeSteps
	// Counters are written when they change.
	waiting, running int64
	lastBudget       [4]int64
	nBudget          int
}

// New starts a timeline on w.
func New(w io.Writer) *Writer {
	t := &Writer{w: bufio.NewWriterSize(w, 1<<16), live: map[int64]*request{}, waiting: -1, running: -1}
	t.raw(`{"displayTimeUnit":"ms","traceEvents":[` + "\n")
	return t
}

func (t *Writer) raw(s string) {
	if t.err == nil {
		_, t.err = t.w.WriteString(s)
	}
}

// emit writes one event; dur < 0 means none (not a complete event).
func (t *Writer) emit(name, cat, ph string, ts, dur int64, pid int, track int64, scope, cname string, args ...arg) {
	b := t.buf[:0]
	if t.n > 0 {
		b = append(b, ",\n"...)
	}
	t.n++
	b = append(b, `{"name":`...)
	b = appendString(b, name)
	if cat != "" {
		b = append(b, `,"cat":"`...)
		b = append(b, cat...)
		b = append(b, '"')
	}
	b = append(b, `,"ph":"`...)
	b = append(b, ph...)
	b = append(b, `","ts":`...)
	b = appendUS(b, ts)
	if dur >= 0 {
		b = append(b, `,"dur":`...)
		b = appendUS(b, dur)
	}
	b = append(b, `,"pid":`...)
	b = strconv.AppendInt(b, int64(pid), 10)
	b = append(b, `,"tid":`...)
	b = strconv.AppendInt(b, track, 10)
	if scope != "" {
		b = append(b, `,"s":"`...)
		b = append(b, scope...)
		b = append(b, '"')
	}
	if cname != "" {
		b = append(b, `,"cname":"`...)
		b = append(b, cname...)
		b = append(b, '"')
	}
	if len(args) > 0 {
		b = append(b, `,"args":{`...)
		for i, a := range args {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, a.k)
			b = append(b, ':')
			if a.isStr {
				b = appendString(b, a.s)
			} else {
				b = strconv.AppendInt(b, a.i, 10)
			}
		}
		b = append(b, '}')
	}
	b = append(b, '}')
	t.buf = b
	if t.err == nil {
		_, t.err = t.w.Write(b)
	}
}

func (t *Writer) span(pid int, track int64, name, cat string, start, end int64, args ...arg) {
	t.emit(name, cat, "X", start, max(0, end-start), pid, track, "", "", args...)
}

func (t *Writer) instant(pid int, track int64, name, cname string, at int64, args ...arg) {
	t.emit(name, "", "i", at, -1, pid, track, "t", cname, args...)
}

func (t *Writer) counter(name string, at int64, args ...arg) {
	t.emit(name, "", "C", at, -1, pidScheduler, tidSteps, "", "", args...)
}

func (t *Writer) req(id, arrivalNS int64) *request {
	r, ok := t.live[id]
	if !ok {
		r = &request{queuedSince: arrivalNS, lastStep: -2}
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
	t.span(pidRequests, tid(id), "decode", "decode", r.decStart, r.decEnd, num("steps", r.decSteps), num("tokens", r.decTokens))
	r.decSteps, r.decTokens = 0, 0
}

// Observe records one executed step and the requests it finished.
func (t *Writer) Observe(out *step.Record) {
	t.step(out)
	for i := range out.Finished {
		t.finish(&out.Finished[i])
	}
}

func (t *Writer) step(out *step.Record) {
	start, end := int64(out.Start), int64(out.End)
	t.end = max(t.end, end)
	for _, id := range out.Preempted {
		r := t.req(id, start)
		t.closeDecode(id, r)
		t.instant(pidRequests, tid(id), "preempted", "bad", start, num("step", out.Step))
		r.queuedSince = start
	}
	var decode, extend, prefill, cut int
	for i := range out.Rows {
		row := &out.Rows[i]
		id := row.RequestID
		r := t.req(id, row.ArrivalNS)
		if r.queuedSince >= 0 {
			t.span(pidRequests, tid(id), "queued", "queued", r.queuedSince, start)
			r.queuedSince = -1
		}
		kind := row.Kind
		if kind == sched.KindDecode {
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
		switch kind {
		case sched.KindExtend:
			extend += row.NumScheduled
		case sched.KindNewCut:
			cut += row.NumScheduled
		default:
			prefill += row.NumScheduled
		}
		slot := int64(-1)
		if len(row.StateBlocks) > 0 {
			slot = int64(row.StateBlocks[0])
		}
		t.span(pidRequests, tid(id), name, "prefill", start, end, num("step", out.Step), inum("tokens", row.NumScheduled),
			inum("num_computed_tokens", row.NumComputed), inum("prompt_tokens", row.NumPrompt),
			str("region", row.Region.String()), str("mamba_path", row.Path.String()), num("slot", slot))
		if slot < 0 {
			continue
		}
		if row.NumComputed == 0 && row.Path == sched.PathDecode {
			t.instant(pidRequests, tid(id), "new request on the Mamba decode path", "terrible", start,
				num("step", out.Step), inum("tokens", row.NumScheduled), num("slot", slot))
		}
		// Bug B, exactly: the first of the row's state writes whose
		// address wrapped, as the backend performed it.
		for _, w := range out.Wrapped {
			if w.RequestID == id {
				t.instant(pidRequests, tid(id), "wrapped state write", "terrible", start, num("step", out.Step),
					inum("slot", int(w.Slot)), inum("wrote_blocks_from", int(w.First)), inum("wrote_blocks_to", int(w.Last)))
				break
			}
		}
	}
	// Steps of nothing but decodes merge into one span, as a request's
	// decode steps do: they are most steps of a long run.
	if extend+prefill+cut == 0 && len(out.Preempted) == 0 {
		d := &t.dec
		if d.steps > 0 && out.Step != d.last+1 {
			t.closeDecodeSteps()
		}
		if d.steps == 0 {
			d.start, d.first = start, out.Step
		}
		d.end, d.last = end, out.Step
		d.steps++
		d.tokens += int64(decode)
		d.maxRows = max(d.maxRows, int64(len(out.Rows)))
	} else {
		t.closeDecodeSteps()
		t.span(pidScheduler, tidSteps, "step "+strconv.FormatInt(out.Step, 10), "step", start, end, num("steps", 1), inum("rows", len(out.Rows)),
			inum("tokens", out.NumScheduledTokens), inum("decode_rows", out.NumDecodes), inum("preempted", len(out.Preempted)))
		t.budget(start, int64(decode), int64(extend), int64(prefill), int64(cut))
	}
	if w, r := int64(out.Waiting), int64(out.Running); w != t.waiting || r != t.running {
		t.waiting, t.running = w, r
		t.counter("queues", start, num("waiting", w), num("running", r))
	}
}

// budget emits the token budget counter when it changes.
func (t *Writer) budget(at int64, v ...int64) {
	cur := [4]int64{v[0], v[1], v[2], v[3]}
	if t.nBudget > 0 && cur == t.lastBudget {
		return
	}
	t.nBudget++
	t.lastBudget = cur
	t.counter("token budget", at, num("decode", cur[0]), num("extend", cur[1]), num("prefill", cur[2]), num("new request cut", cur[3]))
}

// closeDecodeSteps ends the open run of decode-only steps; the budget
// counter shows its mean decode tokens per step.
func (t *Writer) closeDecodeSteps() {
	d := &t.dec
	if d.steps == 0 {
		return
	}
	name := "step " + strconv.FormatInt(d.first, 10)
	if d.steps > 1 {
		name = fmt.Sprintf("steps %d-%d (decode only)", d.first, d.last)
	}
	t.span(pidScheduler, tidSteps, name, "step", d.start, d.end, num("steps", d.steps), num("tokens", d.tokens), num("max_rows", d.maxRows))
	t.budget(d.start, (d.tokens+d.steps/2)/d.steps, 0, 0, 0)
	*d = decodeSteps{}
}

// finish closes a finished request's track.
func (t *Writer) finish(q *step.Finished) {
	id := q.RequestID
	r, ok := t.live[id]
	if !ok {
		return
	}
	t.closeDecode(id, r)
	t.instant(pidRequests, tid(id), "finished", "good", q.FinishNS, inum("output_tokens", q.NumOutputTokens))
	delete(t.live, id)
}

// Violations marks invariant violations (a report's kept ones) on their
// request's track, or on the scheduler's when they name no request.
func (t *Writer) Violations(vs []invariant.Violation) {
	for _, v := range vs {
		pid, track := pidRequests, tid(v.RequestID)
		if v.RequestID < 0 {
			pid, track = pidScheduler, tidSteps
		}
		t.instant(pid, track, v.Name, "terrible", v.TimeNS, num("step", v.Step), str("detail", v.Detail))
	}
}

// Close ends open spans, names the tracks and finishes the JSON; it
// returns the first write error.
func (t *Writer) Close() error {
	t.closeDecodeSteps()
	ids := make([]int64, 0, len(t.live))
	for id := range t.live {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		r := t.live[id]
		t.closeDecode(id, r)
		if r.queuedSince >= 0 {
			t.span(pidRequests, tid(id), "queued (never scheduled)", "queued", r.queuedSince, t.end)
		}
	}
	meta := func(pid int, track int64, name string, a arg) {
		t.emit(name, "", "M", 0, -1, pid, track, "", "", a)
	}
	meta(pidScheduler, 0, "process_name", str("name", "scheduler"))
	meta(pidScheduler, tidSteps, "thread_name", str("name", "steps"))
	meta(pidRequests, 0, "process_name", str("name", "requests"))
	seen := append([]int64(nil), t.seen...)
	sort.Slice(seen, func(i, j int) bool { return seen[i] < seen[j] })
	for _, id := range seen {
		meta(pidRequests, tid(id), "thread_name", str("name", fmt.Sprintf("request %d", id)))
		meta(pidRequests, tid(id), "thread_sort_index", num("sort_index", id))
	}
	t.raw("\n]}\n")
	if t.err == nil {
		t.err = t.w.Flush()
	}
	return t.err
}
