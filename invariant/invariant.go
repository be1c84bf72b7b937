package invariant

import (
	"fmt"
	"strings"
)

// Invariant is one checked property.
type Invariant uint8

const (
	// NoDecodeBeforePrefill: a request with no computed tokens never takes
	// a Mamba layer's decode path.
	NoDecodeBeforePrefill Invariant = iota
	// StaleSlotRead: a state or KV read sees bytes that are not the
	// reader's own (a previous owner's, or a clobber).
	StaleSlotRead
	// WrongAddressWrite: a state write lands outside the intended slot.
	WrongAddressWrite
	// TokenBudget: scheduled tokens ≤ max_num_batched_tokens.
	TokenBudget
	// MaxNumSeqs: running requests ≤ max_num_seqs.
	MaxNumSeqs
	// BlockConservation: every block is free or held by exactly one live
	// request; nothing leaks.
	BlockConservation
	// Liveness: every request finishes; the engine never stalls.
	Liveness
	// TimeMonotonic: simulated time never goes back.
	TimeMonotonic
	NumInvariants
)

var names = [...]string{
	"no-decode-before-prefill",
	"stale-slot-read",
	"wrong-address-write",
	"token-budget",
	"max-num-seqs",
	"block-conservation",
	"liveness",
	"time-monotonic",
}

func (i Invariant) String() string {
	if i < NumInvariants {
		return names[i]
	}
	return fmt.Sprintf("invariant(%d)", uint8(i))
}

// Parse returns the invariant with a given name.
func Parse(name string) (Invariant, error) {
	for i, n := range names {
		if n == name {
			return Invariant(i), nil
		}
	}
	return 0, fmt.Errorf("unknown invariant %q (known: %s)", name, strings.Join(names[:], ", "))
}

// All lists every invariant in order.
func All() []Invariant {
	out := make([]Invariant, NumInvariants)
	for i := range out {
		out[i] = Invariant(i)
	}
	return out
}

// Violation is one occurrence. Slot and PrevOwner are -1 where they do not
// apply.
type Violation struct {
	Invariant Invariant `json:"-"`
	Name      string    `json:"invariant"`
	Step      int64     `json:"step"`
	TimeNS    int64     `json:"time_ns"`
	RequestID int64     `json:"request_id"`
	Slot      int64     `json:"slot"`
	PrevOwner int64     `json:"prev_owner"`
	// Write: the access was a write into a block the request no longer
	// holds (align mode's freed-block writes), not a read: the harm lands
	// on whoever reads that block next, not on this request's output.
	Write  bool   `json:"write,omitempty"`
	Detail string `json:"detail"`
}

func (v Violation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: step %d", v.Name, v.Step)
	if v.RequestID >= 0 {
		fmt.Fprintf(&b, ", request %d", v.RequestID)
	}
	if v.Slot >= 0 {
		fmt.Fprintf(&b, ", slot %d", v.Slot)
	}
	if v.PrevOwner >= 0 {
		fmt.Fprintf(&b, ", previous owner %d", v.PrevOwner)
	}
	if v.Detail != "" {
		b.WriteString(": ")
		b.WriteString(v.Detail)
	}
	return b.String()
}

// Recorder counts violations and keeps the first Keep of each invariant.
// Detail strings are built lazily by callers only when Wants is true, so a
// run with millions of violations stays cheap.
type Recorder struct {
	Keep   int
	counts [NumInvariants]int64
	kept   [NumInvariants][]Violation
	// Hook, when set, sees every violation (for traces and tests).
	Hook func(Violation)
}

// NewRecorder keeps up to keep occurrences per invariant.
func NewRecorder(keep int) *Recorder { return &Recorder{Keep: keep} }

// Wants reports whether an occurrence of inv would be kept or hooked, so
// the caller can skip formatting details otherwise.
func (r *Recorder) Wants(inv Invariant) bool {
	return r.Hook != nil || len(r.kept[inv]) < r.Keep
}

// Add records one violation.
func (r *Recorder) Add(v Violation) {
	r.counts[v.Invariant]++
	v.Name = v.Invariant.String()
	if len(r.kept[v.Invariant]) < r.Keep {
		r.kept[v.Invariant] = append(r.kept[v.Invariant], v)
	}
	if r.Hook != nil {
		r.Hook(v)
	}
}

// Count is the number of violations of inv.
func (r *Recorder) Count(inv Invariant) int64 { return r.counts[inv] }

// Total is the number of violations of all invariants.
func (r *Recorder) Total() int64 {
	var t int64
	for _, c := range r.counts {
		t += c
	}
	return t
}

// Kept returns the kept occurrences of inv, in the order they happened.
func (r *Recorder) Kept(inv Invariant) []Violation { return r.kept[inv] }
