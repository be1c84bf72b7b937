package workload

import (
	"math"
	"math/rand/v2"

	"statesim/sim"
	"statesim/statecache"
)

// sessionsSource is a closed loop of multi-turn conversations: every
// session starts at 0 (Sessions concurrent users) and sends its next turn
// think time after its previous turn finished. A turn's prompt is the
// previous turn's prompt and output plus the new user text (prompt_len), so
// its Prefix is the previous Prefix, a segment naming the previous output
// by its OutputID, and a segment of new user text; the prompt has no own
// tail, and its output is the tail hashed under its OutputID, which is how
// the next turn shares it.
//
// Arrivals come out in time order without knowing the clock: the first
// turns are all at 0, and every later one at finish + a constant think
// time, where finishes are reported in time order.
type sessionsSource struct {
	spec *Spec
	rng  *rand.Rand
	seed uint64
	sess []session
	// ready is a FIFO ring of sessions whose next turn's time is known;
	// each session is in it at most once.
	ready      []readyTurn
	head, size int
	n          int // requests submitted
	think      sim.Time
}

type session struct {
	segs     []statecache.Segment // the next turn's prefix so far; append-only
	turn     int                  // turns submitted
	inFlight bool
	out      statecache.Segment // the in-flight turn's output, as the next turn names it
}

type readyTurn struct {
	at sim.Time
	g  int
}

func newSessions(s *Spec, rng *rand.Rand, seed uint64) *sessionsSource {
	src := &sessionsSource{spec: s, rng: rng, seed: seed, sess: make([]session, s.Sessions),
		ready: make([]readyTurn, s.Sessions), think: sim.FromSeconds(s.ThinkTimeS)}
	sys := statecache.Segment{ID: contentID(systemSalt, seed, 0), Tokens: int32(s.SystemPromptTokens)}
	for g := range src.sess {
		if sys.Tokens > 0 {
			src.sess[g].segs = append(src.sess[g].segs, sys)
		}
		src.push(readyTurn{0, g})
	}
	return src
}

func (q *sessionsSource) push(r readyTurn) {
	q.ready[(q.head+q.size)%len(q.ready)] = r
	q.size++
}

func (q *sessionsSource) Total() int { return q.spec.Sessions * q.spec.TurnsPerSession }
func (q *sessionsSource) Done() bool { return q.n >= q.Total() }

func (q *sessionsSource) Next() (Arrival, bool, error) {
	if q.size == 0 {
		return Arrival{}, false, nil
	}
	r := q.ready[q.head]
	q.head, q.size = (q.head+1)%len(q.ready), q.size-1
	s := &q.sess[r.g]
	user := q.spec.PromptLen.Draw(q.rng)
	out := q.spec.OutputLen.Draw(q.rng)
	s.segs = append(s.segs, statecache.Segment{ID: contentID(userSalt, q.seed, uint64(q.n)), Tokens: int32(user)})
	id := outputID(q.seed, q.n)
	a := Arrival{At: r.at, PromptLen: statecache.SegmentTokens(s.segs), OutputLen: out, Group: r.g,
		Seed: sim.Mix(q.seed ^ sim.Mix(uint64(q.n)+1)), Prefix: s.segs[:len(s.segs):len(s.segs)], OutputID: id}
	s.turn++
	s.inFlight = true
	s.out = statecache.Segment{ID: id, Tokens: int32(out)}
	q.n++
	return a, true, nil
}

// Finished queues the session's next turn think time after its turn ended.
func (q *sessionsSource) Finished(g int, now sim.Time) {
	if g < 0 || g >= len(q.sess) || !q.sess[g].inFlight {
		return
	}
	s := &q.sess[g]
	s.inFlight = false
	if s.turn >= q.spec.TurnsPerSession {
		s.segs = nil
		return
	}
	s.segs = append(s.segs, s.out)
	q.push(readyTurn{now + q.think, g})
}

// maxSessionTokens is the longest sequence a session can reach: its last
// turn's prompt (system prompt, every turn's user text and every earlier
// output) plus its output.
// It saturates at MaxInt64 rather than wrap.
func (s *Spec) maxSessionTokens() int64 {
	turn := int64(s.PromptLen.MaxValue()) + int64(s.OutputLen.MaxValue())
	if n := int64(s.TurnsPerSession); n > 0 && turn > (math.MaxInt64-int64(s.SystemPromptTokens))/n {
		return math.MaxInt64
	}
	return int64(s.SystemPromptTokens) + int64(s.TurnsPerSession)*turn
}
