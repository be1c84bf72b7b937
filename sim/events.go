package sim

import (
	"errors"
	"fmt"
)

// Priority orders events that fire at the same instant: lower runs first.
// The engine uses it so that a step's completion is applied before arrivals
// at the same time, and both before the next step is scheduled.
type Priority uint8

// Event is one thing that happens at a simulated instant. Kind and Arg are
// interpreted by the owner of the loop; the queue only orders them.
type Event struct {
	At       Time
	Priority Priority
	Seq      uint64 // insertion order; breaks every remaining tie
	Kind     uint8
	Arg      int64
}

func (a *Event) before(b *Event) bool {
	if a.At != b.At {
		return a.At < b.At
	}
	if a.Priority != b.Priority {
		return a.Priority < b.Priority
	}
	return a.Seq < b.Seq
}

// ErrTimeWentBack is returned when an event is scheduled before the current
// time: the invariant "time never goes back" is enforced here, once.
var ErrTimeWentBack = errors.New("sim: event scheduled in the past")

// Loop is the pending events, kept sorted latest-first so that the next
// event is the last element, plus the virtual clock. The engine pulls
// arrivals lazily, so only a handful of events are ever pending: a sorted
// slice beats a heap at that size (insertion scans from the end, where the
// soonest events are; popping is O(1)). It is not safe for concurrent use;
// a run owns exactly one Loop.
type Loop struct {
	now    Time
	seq    uint64
	events []Event // sorted: events[i+1].before(&events[i])
}

// Now is the current simulated time.
func (l *Loop) Now() Time { return l.now }

// Len is the number of pending events.
func (l *Loop) Len() int { return len(l.events) }

// Schedule adds an event at absolute time at.
func (l *Loop) Schedule(at Time, p Priority, kind uint8, arg int64) error {
	if at < l.now {
		return fmt.Errorf("%w: at %v, now %v (kind %d)", ErrTimeWentBack, at, l.now, kind)
	}
	l.seq++
	e := Event{At: at, Priority: p, Seq: l.seq, Kind: kind, Arg: arg}
	// Find the first position from the end whose event is not after e:
	// e goes just before it (e is later than everything behind it).
	i := len(l.events)
	l.events = append(l.events, e)
	for i > 0 && l.events[i-1].before(&e) {
		l.events[i] = l.events[i-1]
		i--
	}
	l.events[i] = e
	return nil
}

// Next pops the earliest event and advances the clock to it.
func (l *Loop) Next() (Event, bool) {
	n := len(l.events)
	if n == 0 {
		return Event{}, false
	}
	e := l.events[n-1]
	l.events = l.events[:n-1]
	l.now = e.At
	return e, true
}

// Peek returns the earliest pending event without removing it.
func (l *Loop) Peek() (Event, bool) {
	n := len(l.events)
	if n == 0 {
		return Event{}, false
	}
	return l.events[n-1], true
}

// AdvanceTo moves the clock to t without an event: for an owner that keeps
// its next event beside the queue (the engine's step end, the one event
// pending on nearly every iteration) and found it earliest.
func (l *Loop) AdvanceTo(t Time) error {
	if t < l.now {
		return fmt.Errorf("%w: advance to %v, now %v", ErrTimeWentBack, t, l.now)
	}
	l.now = t
	return nil
}
