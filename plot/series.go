package plot

import "statesim/invariant"

// Bounds on what a Run keeps, whatever the run's length: bins merge in
// pairs when there are maxKeptBins of them, so a chart gets between
// maxKeptBins/2 and maxKeptBins points and memory stays constant.
const (
	maxKeptBins = 1200
	zoomBefore  = 15 // steps kept before the zoom's trigger
	zoomSteps   = 60 // steps in the zoom window
)

// Bin aggregates consecutive executed steps.
type Bin struct {
	FirstStep, LastStep int64
	StartNS, EndNS      int64
	// Busiest is the token split of the bin's busiest step: a mean would
	// hide the short bursts that exhaust the budget.
	Busiest                         Step
	MaxBlocksHeld, MaxSlotsHeld     int32
	MinFreeQueue                    int32
	HighestSlot                     int64 // a trace's slots are 64-bit
	MaxWaiting, MaxRunning, MaxRows int32
	Preempted                       int64
	Steps                           int64
	// PrefixQueries and PrefixHits sum the bin's steps (tokens).
	PrefixQueries, PrefixHits int64
	// MaxHeldPerRequest is the most blocks one running request held (-1:
	// unknown); HeldTotal over HeldBy the mean per running request.
	MaxHeldPerRequest int32
	HeldTotal, HeldBy int64
}

func (s *Step) tokens() int32 { return s.Decode + s.Extend + s.Prefill + s.NewCut }

func newBin(s *Step) Bin {
	return Bin{FirstStep: s.Step, LastStep: s.Step, StartNS: s.StartNS, EndNS: s.EndNS, Busiest: *s,
		MaxBlocksHeld: s.BlocksHeld, MaxSlotsHeld: s.SlotsHeld, MinFreeQueue: s.FreeQueue, HighestSlot: s.HighestSlot,
		MaxWaiting: s.Waiting, MaxRunning: s.Running, MaxRows: s.Rows, Preempted: int64(s.Preempted), Steps: 1,
		PrefixQueries: s.PrefixQueries, PrefixHits: s.PrefixHits,
		MaxHeldPerRequest: s.HeldMax, HeldTotal: int64(s.HeldTotal), HeldBy: int64(s.HeldBy)}
}

// merge folds o (the later bin) into b.
func (b *Bin) merge(o *Bin) {
	b.LastStep, b.EndNS = o.LastStep, o.EndNS
	if o.Busiest.tokens() > b.Busiest.tokens() {
		b.Busiest = o.Busiest
	}
	b.MaxBlocksHeld = max(b.MaxBlocksHeld, o.MaxBlocksHeld)
	b.MaxSlotsHeld = max(b.MaxSlotsHeld, o.MaxSlotsHeld)
	b.MinFreeQueue = min(b.MinFreeQueue, o.MinFreeQueue)
	b.HighestSlot = max(b.HighestSlot, o.HighestSlot)
	b.MaxWaiting = max(b.MaxWaiting, o.MaxWaiting)
	b.MaxRunning = max(b.MaxRunning, o.MaxRunning)
	b.MaxRows = max(b.MaxRows, o.MaxRows)
	b.Preempted += o.Preempted
	b.Steps += o.Steps
	b.PrefixQueries += o.PrefixQueries
	b.PrefixHits += o.PrefixHits
	b.MaxHeldPerRequest = max(b.MaxHeldPerRequest, o.MaxHeldPerRequest)
	b.HeldTotal += o.HeldTotal
	b.HeldBy += o.HeldBy
}

// Marker is an exact step with a count of events there.
type Marker struct {
	Step  int64
	Count int64
}

func mark(ms []Marker, step, n int64) []Marker {
	if n <= 0 {
		return ms
	}
	if k := len(ms); k > 0 && ms[k-1].Step == step {
		ms[k-1].Count += n
		return ms
	}
	return append(ms, Marker{Step: step, Count: n})
}

// series is the bounded per-step record a Run is made of.
type series struct {
	Bins     []Bin
	BinWidth int64 // steps per full bin
	NumSteps int64
	// Exact markers: new requests cut short, given one token, and
	// violations per invariant.
	Cut, OneToken []Marker
	Violations    [invariant.NumInvariants][]Marker
	// Zoom is every step around the first violation (or, failing that,
	// the first new request given one token).
	Zoom []Step

	recent   []Step // ring of the last zoomBefore steps
	zoomKind int    // 0 none, 1 one token, 2 violation
	zoomLeft int
}

func (s *series) add(st *Step) {
	if s.BinWidth == 0 {
		s.BinWidth = 1
	}
	s.NumSteps++
	if n := len(s.Bins); n > 0 && s.Bins[n-1].Steps < s.BinWidth {
		b := newBin(st)
		s.Bins[n-1].merge(&b)
	} else {
		if n == maxKeptBins {
			for i := 0; i < n/2; i++ {
				s.Bins[i] = s.Bins[2*i]
				s.Bins[i].merge(&s.Bins[2*i+1])
			}
			s.Bins = s.Bins[:n/2]
			s.BinWidth *= 2
		}
		s.Bins = append(s.Bins, newBin(st))
	}
	s.Cut = mark(s.Cut, st.Step, int64(st.CutNew))
	s.OneToken = mark(s.OneToken, st.Step, int64(st.OneToken))
	violated := false
	for i, v := range st.Violations {
		s.Violations[i] = mark(s.Violations[i], st.Step, int64(v))
		violated = violated || v > 0
	}
	s.zoom(st, violated)
}

// zoom keeps the unbinned window around the first violation, or around
// the first one-token cut until a violation shows up.
func (s *series) zoom(st *Step, violated bool) {
	kind := 0
	switch {
	case violated:
		kind = 2
	case st.OneToken > 0:
		kind = 1
	}
	if kind > s.zoomKind {
		s.zoomKind = kind
		s.Zoom = append(append(s.Zoom[:0], s.recent...), *st)
		s.zoomLeft = zoomSteps - len(s.Zoom)
	} else if s.zoomLeft > 0 {
		s.Zoom = append(s.Zoom, *st)
		s.zoomLeft--
	}
	if len(s.recent) == zoomBefore {
		copy(s.recent, s.recent[1:])
		s.recent = s.recent[:zoomBefore-1]
	}
	s.recent = append(s.recent, *st)
}

// addLate puts violations found after the last step (liveness, leaks)
// on the last step.
func (s *series) addLate(inv invariant.Invariant, n int64) {
	if n <= 0 || len(s.Bins) == 0 {
		return
	}
	last := s.Bins[len(s.Bins)-1].LastStep
	s.Violations[inv] = mark(s.Violations[inv], last, n)
}
