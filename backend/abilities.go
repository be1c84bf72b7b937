package backend

import (
	"statesim/report"
	"statesim/sched"
)

// The optional abilities of a backend, each a named interface the engine
// asks for once per run.

// Finisher keeps per-request data (token ids, log-probs) and wants to know
// when a request is done with.
type Finisher interface {
	Finish(r *sched.Request)
}

// Flusher holds requests in flight (the numeric backends compare a
// request when it finishes); FlushPending compares those still in flight
// when a run ends early, so no request escapes the comparison.
type Flusher interface {
	FlushPending()
}

// Differ compares every finished request's log-probs with a reference run.
type Differ interface {
	Stats() report.DivergenceStats
	Divergences() []report.Divergence
}

// TokenTracer gives one request's generated tokens with engine and
// reference log-probs. KeepTrace is called before the run.
type TokenTracer interface {
	KeepTrace(id int64)
	TokenTrace(id int64) []report.TokenTrace
}

// Extra adds a backend-specific section to the run's report, under a
// stable key (the CUDA backend's device summary).
type Extra interface {
	ReportExtra() (key string, section any)
}
