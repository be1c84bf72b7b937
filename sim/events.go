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

// Loop is a min-heap of events plus the virtual clock. It is not safe for
// concurrent use; a run owns exactly one Loop.
type Loop struct {
	now  Time
	seq  uint64
	heap []Event
}

// Now is the current simulated time.
func (l *Loop) Now() Time { return l.now }

// Len is the number of pending events.
func (l *Loop) Len() int { return len(l.heap) }

// Schedule adds an event at absolute time at.
func (l *Loop) Schedule(at Time, p Priority, kind uint8, arg int64) error {
	if at < l.now {
		return fmt.Errorf("%w: at %v, now %v (kind %d)", ErrTimeWentBack, at, l.now, kind)
	}
	l.seq++
	l.heap = append(l.heap, Event{At: at, Priority: p, Seq: l.seq, Kind: kind, Arg: arg})
	l.up(len(l.heap) - 1)
	return nil
}

// Next pops the earliest event and advances the clock to it.
func (l *Loop) Next() (Event, bool) {
	if len(l.heap) == 0 {
		return Event{}, false
	}
	e := l.heap[0]
	last := len(l.heap) - 1
	l.heap[0] = l.heap[last]
	l.heap = l.heap[:last]
	if last > 0 {
		l.down(0)
	}
	l.now = e.At
	return e, true
}

// Peek returns the earliest pending event without removing it.
func (l *Loop) Peek() (Event, bool) {
	if len(l.heap) == 0 {
		return Event{}, false
	}
	return l.heap[0], true
}

func (l *Loop) up(i int) {
	h := l.heap
	for i > 0 {
		p := (i - 1) / 2
		if !h[i].before(&h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (l *Loop) down(i int) {
	h := l.heap
	n := len(h)
	for {
		c := 2*i + 1
		if c >= n {
			return
		}
		if r := c + 1; r < n && h[r].before(&h[c]) {
			c = r
		}
		if !h[c].before(&h[i]) {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}
