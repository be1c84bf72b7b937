package engine

import (
	"encoding/binary"
	"fmt"
	"hash"
	"hash/maphash"
	"reflect"
	"testing"

	"statesim/sched"
	"statesim/statecache"
	"statesim/step"
)

// withDigest sets opt's test hooks to write into h what two ways of
// running must agree on beyond the report: every finished request's times
// and counts, and once the run ends every block's provenance and, with
// prefix caching, every block's cache record, the free queue and the
// cache's counters. Per request and block the fields are varints (fmt on
// every block of every run was most of TestBulkMatchesStepByStep).
func withDigest(opt Options, h hash.Hash) Options {
	var b []byte
	n := func(v int64) { b = binary.AppendVarint(b, v) }
	flush := func() {
		if len(b) > 1<<15 {
			h.Write(b)
			b = b[:0]
		}
	}
	opt.finished = func(q *sched.Request) {
		for _, v := range []int64{int64(q.ID), int64(q.ArrivalTime), int64(q.FirstTokenTime), int64(q.LastTokenTime),
			int64(q.FinishTime), int64(q.NumOutputTokens), int64(q.NumPreemptions), q.CorruptStep} {
			n(v)
		}
		flush()
	}
	opt.ended = func(r *runner) {
		b = fmt.Appendf(b, "%d %d %+v\n", r.s.Out().Step, r.loop.Now(), r.sym.Stats)
		for blk := range int32(r.nBlocks) {
			p := r.sym.Prov.Get(blk)
			if p.Content == statecache.Zero {
				continue
			}
			for _, v := range []int64{int64(blk), int64(p.Writer), int64(p.Content), int64(p.Tokens), p.Step} {
				n(v)
			}
			b = append(b, byte(b2i(p.Tainted)), byte(b2i(p.Clobber)))
			n(int64(p.Intended))
			flush()
		}
		if pool := r.kv.Pool; pool.PrefixCaching() {
			// What the cache says each block holds, and the eviction order.
			for blk := int32(1); blk < int32(pool.NumBlocks()); blk++ {
				c := pool.Record(blk)
				for _, v := range []int64{int64(blk), int64(c.Hash), int64(c.Writer), c.Step, int64(c.Group), int64(c.Tokens)} {
					n(v)
				}
				b = append(b, byte(b2i(c.Cached)))
				n(int64(pool.RefCount(blk)))
				flush()
			}
			b = fmt.Appendf(b, "%v %+v\n", pool.FreeQueue(), pool.Stats())
		}
		h.Write(b)
		b = b[:0]
	}
	return opt
}

// The digest and recordKey spell out Provenance's, PrefixRecord's,
// step.Record's and step.Row's fields one by one: a field added to one of
// them must be added to its writer too.
func TestDigestCoversEveryField(t *testing.T) {
	for _, c := range []struct {
		v      any
		fields int
		by     string
	}{
		{statecache.Provenance{}, 8, "withDigest"}, // leased is settled by Get, never seen
		{statecache.PrefixRecord{}, 6, "withDigest"},
		{step.Record{}, 29, "recordKey"},
		{step.Row{}, 21, "recordKey"},
	} {
		if got := reflect.TypeOf(c.v).NumField(); got != c.fields {
			t.Errorf("%T has %d fields, %s writes %d: add the new ones to it", c.v, got, c.by, c.fields)
		}
	}
}

// traceSeed is one process's seed for traceHash: hashes are compared
// within a test run only.
var traceSeed = maphash.MakeSeed()

// traceHash hashes a --trace stream for comparing two runs' traces:
// maphash is five times SHA-256's speed, and the traces of a test run are
// hundreds of megabytes. Its 64 bits only ever decide whether two of one
// run's streams are equal.
func traceHash() hash.Hash64 {
	h := new(maphash.Hash)
	h.SetSeed(traceSeed)
	return h
}
