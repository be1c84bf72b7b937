package engine

import (
	"bytes"
	"crypto/sha256"

	"statesim/scenarios"
)

// Listing is what a run with the prefix cache's table listing every
// cached block (vLLM's table, listAll) and one with private tails must
// agree on, and what tells whether a run tested anything.
type Listing struct {
	// Outcome: the report (JSON and text), every stepped record,
	// finished requests and the final cache (withDigest).
	Outcome     []byte
	Preemptions int64 // preempted requests find their own blocks again
	// Private blocks cached out of the table, and listed later because
	// their request was preempted (statecache.BlockPool.PrivateCounts).
	Private, Published int64
}

// RunListing runs sc either way: TestPrivateTailsMatchListingAll, and
// TestPrivateTailsProperty from outside the package (its generator,
// prop, imports this one).
func RunListing(sc *scenarios.Scenario, listAll bool) (Listing, error) {
	var out Listing
	h, recs := sha256.New(), sha256.New()
	opt := withDigest(Options{listAll: listAll, SkipSteady: true, Observe: recordsInto(recs)}, h)
	ended := opt.ended
	opt.ended = func(r *runner) {
		ended(r)
		out.Private, out.Published = r.kv.Pool.PrivateCounts()
	}
	rep, err := Run(sc, opt)
	if err != nil {
		return out, err
	}
	var b bytes.Buffer
	if err := rep.WriteJSON(&b); err != nil {
		return out, err
	}
	if err := rep.WriteText(&b); err != nil {
		return out, err
	}
	b.Write(recs.Sum(nil))
	b.Write(h.Sum(nil))
	out.Outcome, out.Preemptions = b.Bytes(), rep.Preemptions
	return out, nil
}
