package engine

import (
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
	"strconv"

	"statesim/sched"
	"statesim/statecache"
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
// length as "slots"): both are additions, so TraceVersion stays, as is a
// step's "block_copies" (left out when none): the copies-on-write run
// before its rows, each {"src","dst","group","kind","request_id","tokens"}
// with kind partial-hit or producer. A step that scheduled nothing runs
// no model but gets a line with no rows, written when it is scheduled:
// under async scheduling, ahead of the step in flight (plot.ReadTrace
// accepts that order and no other).
//
// The last line is the closing record, written when the run ends:
//
//	{"v":2,"end":{"scenario":"imposter","seed":3,"steps":..,"rows":..,"crc32c":"89abcdef"}}
//
// the scenario's name and seed, the step lines and rows before it, and
// the CRC-32C (Castagnoli) of every byte before it, so a reader can tell
// a whole trace from one cut short (a killed run ends on a whole line
// more often than not) or edited, and which scenario it replays.
type traceWriter struct {
	w   io.Writer
	buf []byte // lines not yet written to w
	err error  // w's first error: later steps write nothing, flush returns it
	// steps, rows and crc are what the closing record says of the lines
	// before it; crc covers the bytes handed to w.
	steps, rows int64
	crc         uint32
	scenario    string
	seed        uint64
}

// TraceCRC is the closing record's checksum table (CRC-32C).
var TraceCRC = crc32.MakeTable(crc32.Castagnoli)

// write hands b to w, adding it to the checksum.
func (t *traceWriter) write(b []byte) {
	t.crc = crc32.Update(t.crc, TraceCRC, b)
	_, t.err = t.w.Write(b)
}

// traceFlushAt is how many buffered bytes make step hand them to w: a
// line is appended in place, so there is no second copy into a bufio
// buffer.
const traceFlushAt = 1 << 16

// rowMiddle holds, per region, path and has_initial_state, the constant
// run of a row from `,"region":"` to the slots' opening bracket: one
// append in place of six.
var rowMiddle = func() (m [4][2][2]string) {
	for r := range m {
		for p := range m[r] {
			for h := range m[r][p] {
				m[r][p][h] = `,"region":"` + sched.Region(r).String() + `","path":"` +
					sched.Path(p).String() + `","has_initial_state":` + strconv.FormatBool(h == 1) + `,"slots":[`
			}
		}
	}
	return m
}()

// graphField is the optional "graph" field per sched.Graph (none when eager).
var graphField = func() (g [3]string) {
	for i := sched.GraphPiecewise; int(i) < len(g); i++ {
		g[i] = `,"graph":"` + i.String() + `"`
	}
	return g
}()

func newTraceWriter(w io.Writer) *traceWriter {
	return &traceWriter{w: w, buf: make([]byte, 0, 2*traceFlushAt)}
}

func (t *traceWriter) step(out *step.Record) {
	if t.err != nil {
		return
	}
	b := t.buf
	b = append(b, `{"v":`+strconv.Itoa(TraceVersion)+`,"step":`...)
	b = appendInt(b, out.Step)
	b = append(b, `,"start_ns":`...)
	b = appendInt(b, int64(out.Start))
	b = append(b, `,"end_ns":`...)
	b = appendInt(b, int64(out.End))
	b = append(b, `,"num_scheduled_tokens":`...)
	b = appendInt(b, int64(out.NumScheduledTokens))
	b = append(b, `,"num_decodes":`...)
	b = appendInt(b, int64(out.NumDecodes))
	b = append(b, `,"preempted":[`...)
	for i, id := range out.Preempted {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendInt(b, id)
	}
	b = append(b, `],"rows":[`...)
	for i := range out.Rows {
		row := &out.Rows[i]
		if i == 0 {
			b = append(b, `{"row":`...)
		} else {
			b = append(b, `,{"row":`...)
		}
		b = appendInt(b, int64(row.BatchIndex))
		b = append(b, `,"request_id":`...)
		b = appendInt(b, row.RequestID)
		b = append(b, `,"scheduled":`...)
		b = appendInt(b, int64(row.NumScheduled))
		b = append(b, `,"computed":`...)
		b = appendInt(b, int64(row.NumComputed))
		b = append(b, `,"prompt":`...)
		b = appendInt(b, int64(row.NumPrompt))
		b = append(b, rowMiddle[row.Region][row.Path][b2i(row.HasInitialState)]...)
		b = appendSlots(b, row.StateBlocks)
		if row.Graph != sched.GraphEager { // left out when eager, so older traces stay byte-identical
			b = append(b, graphField[row.Graph]...)
		}
		if len(row.KernelSlots) > 0 {
			b = append(b, `,"kernel_slots":[`...)
			b = appendSlots(b, row.KernelSlots)
		}
		b = append(b, '}')
	}
	b = append(b, ']')
	if len(out.BlockCopies) > 0 { // left out when none, as "graph"
		b = appendCopies(b, out.BlockCopies)
	}
	b = append(b, "}\n"...)
	t.steps++
	t.rows += int64(len(out.Rows))
	if len(b) >= traceFlushAt {
		t.write(b)
		b = b[:0]
	}
	t.buf = b
}

// copyKinds names statecache.CopyKind in the trace.
var copyKinds = [...]string{statecache.CopyPartialHit: "partial-hit", statecache.CopyProducer: "producer"}

// appendCopies appends the step's "block_copies" field.
func appendCopies(b []byte, copies []statecache.BlockCopy) []byte {
	b = append(b, `,"block_copies":[`...)
	for i := range copies {
		c := &copies[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"src":`...)
		b = appendInt(b, int64(c.Src))
		b = append(b, `,"dst":`...)
		b = appendInt(b, int64(c.Dst))
		b = append(b, `,"group":`...)
		b = appendInt(b, int64(c.Group))
		b = append(b, `,"kind":"`...)
		if int(c.Kind) < len(copyKinds) {
			b = append(b, copyKinds[c.Kind]...)
		}
		b = append(b, `","request_id":`...)
		b = appendInt(b, int64(c.Req))
		b = append(b, `,"tokens":`...)
		b = appendInt(b, int64(c.Tokens))
		b = append(b, '}')
	}
	return append(b, ']')
}

func b2i(v bool) int {
	if v {
		return 1
	}
	return 0
}

// appendSlots appends slots and the closing bracket of their JSON array
// (the caller wrote the opening one).
func appendSlots(b []byte, slots []int32) []byte {
	for j, s := range slots {
		if j > 0 {
			b = append(b, ',')
		}
		b = appendInt(b, int64(s)) // int32: appendSmall when under 10,000
	}
	return append(b, ']')
}

// digitPairs is "00" to "99": appendInt writes two digits per division.
const digitPairs = "00010203040506070809" + "10111213141516171819" +
	"20212223242526272829" + "30313233343536373839" + "40414243444546474849" +
	"50515253545556575859" + "60616263646566676869" + "70717273747576777879" +
	"80818283848586878889" + "90919293949596979899"

// appendInt is strconv.AppendInt(b, v, 10) without its scratch array and
// copy: most trace fields (rows, ids, token counts, slots) are under
// 10,000 and take one append of their digits.
func appendInt(b []byte, v int64) []byte {
	if uint64(v) < 10000 {
		return appendSmall(b, uint32(v))
	}
	if v < 0 {
		return strconv.AppendInt(b, v, 10) // no trace field is negative
	}
	u := uint64(v)
	n := 5 // digits
	for x := u / 100000; x > 0; x /= 10 {
		n++
	}
	l := len(b)
	b = slices.Grow(b, n)[:l+n]
	for i := l + n; i > l+1; i -= 2 {
		q := u / 100
		d := (u - q*100) * 2
		b[i-2], b[i-1] = digitPairs[d], digitPairs[d+1]
		u = q
	}
	if n&1 == 1 {
		b[l] = byte('0' + u)
	}
	return b
}

// appendSmall appends u < 10,000 in decimal.
func appendSmall(b []byte, u uint32) []byte {
	switch {
	case u < 10:
		return append(b, byte('0'+u))
	case u < 100:
		return append(b, digitPairs[u*2], digitPairs[u*2+1])
	case u < 1000:
		q := u / 100
		d := (u - q*100) * 2
		return append(b, byte('0'+q), digitPairs[d], digitPairs[d+1])
	default:
		q := u / 100
		h, d := q*2, (u-q*100)*2
		return append(b, digitPairs[h], digitPairs[h+1], digitPairs[d], digitPairs[d+1])
	}
}

// flush ends the trace: the buffered lines, then the closing record.
// Called once, when the run has ended.
func (t *traceWriter) flush() error {
	if t.err != nil {
		return t.err
	}
	t.crc = crc32.Update(t.crc, TraceCRC, t.buf)
	name, _ := json.Marshal(t.scenario)
	b := append(t.buf, `{"v":`+strconv.Itoa(TraceVersion)+`,"end":{"scenario":`...)
	b = append(b, name...)
	b = append(b, `,"seed":`...)
	b = strconv.AppendUint(b, t.seed, 10)
	b = append(b, `,"steps":`...)
	b = appendInt(b, t.steps)
	b = append(b, `,"rows":`...)
	b = appendInt(b, t.rows)
	b = append(b, `,"crc32c":"`...)
	b = append(b, fmt.Sprintf("%08x", t.crc)...)
	b = append(b, "\"}}\n"...)
	_, t.err = t.w.Write(b)
	t.buf = b[:0]
	return t.err
}
