package sched

// Kind is what a row is doing for its request this step, from the
// request's own counts alone (not from where the reorder put it): the one
// definition that reports, plots, timelines and properties share.
type Kind uint8

const (
	// KindDecode: the prompt is computed; the row generates.
	KindDecode Kind = iota
	// KindExtend: a later chunk of a prompt (some tokens computed).
	KindExtend
	// KindNewCut: a request with nothing computed, given part of its
	// prompt (bug A's trigger when that part is 1 token).
	KindNewCut
	// KindNew: a request with nothing computed, given its whole prompt.
	KindNew
	NumKinds
)

var kindNames = [...]string{"decode", "extend", "new-cut", "new"}

func (k Kind) String() string { return kindNames[k] }

// RowKind classifies a row by its scheduled and computed tokens and its
// prompt length.
func RowKind(scheduled, computed, prompt int) Kind {
	switch {
	case computed >= prompt:
		return KindDecode
	case computed > 0:
		return KindExtend
	case scheduled < prompt:
		return KindNewCut
	}
	return KindNew
}

// Kind is the row's kind.
func (r *Row) Kind() Kind { return RowKind(r.NumScheduled, r.NumComputed, r.Req.NumPromptTokens) }

// IsNew reports a row of a request with no computed tokens: brand new, or
// back after a recompute preemption. It has no state to continue.
func (k Kind) IsNew() bool { return k == KindNewCut || k == KindNew }
