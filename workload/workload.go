package workload

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"statesim/sim"
	"statesim/statecache"
	"statesim/trace"
)

// Spec is the workload section of a scenario.
type Spec struct {
	// Kind: batches, poisson, rollouts, sessions, trace or synthetic.
	Kind string `yaml:"kind" json:"kind"`

	// batches: NumPrompts submitted BatchSize at a time.
	NumPrompts int `yaml:"num_prompts,omitempty" json:"num_prompts,omitempty"`
	BatchSize  int `yaml:"batch_size,omitempty" json:"batch_size,omitempty"`

	// poisson and synthetic: Count requests at Rate per second.
	Rate  float64 `yaml:"rate,omitempty" json:"rate,omitempty"`
	Count int     `yaml:"count,omitempty" json:"count,omitempty"`

	// rollouts: Prompts × RolloutsPerPrompt requests per training step,
	// for Steps steps; TrainTimeS of training between steps.
	Prompts           int     `yaml:"prompts,omitempty" json:"prompts,omitempty"`
	RolloutsPerPrompt int     `yaml:"rollouts_per_prompt,omitempty" json:"rollouts_per_prompt,omitempty"`
	Steps             int     `yaml:"steps,omitempty" json:"steps,omitempty"`
	TrainTimeS        float64 `yaml:"train_time_s,omitempty" json:"train_time_s,omitempty"`

	// sessions: Sessions multi-turn conversations, all starting at 0, of
	// TurnsPerSession turns each; a turn arrives ThinkTimeS after the
	// previous one finished, its prompt the previous prompt + output +
	// prompt_len new user tokens (output_len its output). Every session's
	// first turn begins with the same SystemPromptTokens (0: none).
	Sessions           int     `yaml:"sessions,omitempty" json:"sessions,omitempty"`
	TurnsPerSession    int     `yaml:"turns_per_session,omitempty" json:"turns_per_session,omitempty"`
	ThinkTimeS         float64 `yaml:"think_time_s,omitempty" json:"think_time_s,omitempty"`
	SystemPromptTokens int     `yaml:"system_prompt_tokens,omitempty" json:"system_prompt_tokens,omitempty"`

	// trace: a CSV (Azure format) or JSONL file, RateScale to compress
	// time, Limit to replay only the first records (0 = all).
	Path      string  `yaml:"path,omitempty" json:"path,omitempty"`
	RateScale float64 `yaml:"rate_scale,omitempty" json:"rate_scale,omitempty"`
	Limit     int     `yaml:"limit,omitempty" json:"limit,omitempty"`
	// Format is a public layout (azure, burstgpt, mooncake, jsonl; see
	// trace.Formats) giving the field names and time unit; empty: by
	// extension, and for CSV by the header.
	Format string `yaml:"format,omitempty" json:"format,omitempty"`
	// The CSV columns or JSONL keys (dotted for nested JSON objects:
	// usage.prompt_tokens) of the arrival time and the prompt and output
	// token counts, and the unit of a numeric time (s, ms, us, ns); empty:
	// the format's.
	TimeField   string `yaml:"time_field,omitempty" json:"time_field,omitempty"`
	PromptField string `yaml:"prompt_field,omitempty" json:"prompt_field,omitempty"`
	OutputField string `yaml:"output_field,omitempty" json:"output_field,omitempty"`
	TimeUnit    string `yaml:"time_unit,omitempty" json:"time_unit,omitempty"`
	// HashField is the JSONL key of each record's content ids, one per
	// HashBlockTokens prompt tokens, whose equal leading ids are a shared
	// prefix (empty: the format's; mooncake: hash_ids of 512 tokens).
	HashField       string `yaml:"hash_field,omitempty" json:"hash_field,omitempty"`
	HashBlockTokens int    `yaml:"hash_block_tokens,omitempty" json:"hash_block_tokens,omitempty"`
	// Strict fails the run on the first record vLLM would refuse (a
	// 0-token prompt, a prompt of max_model_len tokens or more, a
	// timestamp earlier than the previous one) instead of rejecting that
	// request alone and counting it.
	Strict bool `yaml:"strict,omitempty" json:"strict,omitempty"`
	// FS, when set, holds Path (a built-in scenario's embedded trace).
	FS fs.FS `yaml:"-" json:"-"`

	// synthetic: a generated trace (trace.Synthetic) of Count requests,
	// Poisson arrivals at Rate per second, lognormal lengths with the
	// Azure conversation trace's spreads around these medians. Lengths
	// are used with prompt_len/output_len {dist: trace}.
	PromptMedian int `yaml:"prompt_median,omitempty" json:"prompt_median,omitempty"`
	OutputMedian int `yaml:"output_median,omitempty" json:"output_median,omitempty"`

	PromptLen Dist `yaml:"prompt_len" json:"prompt_len"`
	OutputLen Dist `yaml:"output_len" json:"output_len"`
}

// badScale: rate_scale is 0 (unset: recorded speed) or finite and > 0.
func badScale(x float64) bool { return !(x >= 0) || math.IsInf(x, 1) }

// FieldError is a validation error tied to a field path inside the spec.
type FieldError struct {
	Path string
	Err  error
}

func (e *FieldError) Error() string { return e.Path + ": " + e.Err.Error() }

func ferr(path, format string, a ...any) error {
	return &FieldError{Path: path, Err: fmt.Errorf(format, a...)}
}

// Bounds on multiplicative knobs: a group (a batch, a training step's
// rollouts) is submitted at once and held in memory, and a run's requests
// are counted in int64 ns of simulated time, so both are capped far above
// any real workload.
const (
	MaxGroup    = 1 << 20 // requests submitted at once
	MaxRequests = 1 << 30 // requests in one run
	// MaxSpanS is the longest simulated span a workload may ask for,
	// about 30 years: int64 ns hold 292.
	MaxSpanS = 1e9
)

// Validate checks the spec for its kind.
func (s *Spec) Validate() error {
	pos := func(name string, v int) error {
		if v < 1 {
			return ferr(name, "must be >= 1, got %d", v)
		}
		return nil
	}
	upTo := func(name string, v, limit int, why string) error {
		if v > limit {
			return ferr(name, "%d is more than %d %s", v, limit, why)
		}
		return nil
	}
	var err error
	switch s.Kind {
	case "batches":
		if err = pos("num_prompts", s.NumPrompts); err == nil {
			err = pos("batch_size", s.BatchSize)
		}
		if err == nil {
			err = upTo("num_prompts", s.NumPrompts, MaxRequests, "requests in one run")
		}
		if err == nil {
			err = upTo("batch_size", s.BatchSize, MaxGroup, "requests submitted at once")
		}
	case "poisson":
		if !(s.Rate > 0) || math.IsInf(s.Rate, 1) {
			return ferr("rate", "must be a finite number > 0, got %g", s.Rate)
		}
		if err = pos("count", s.Count); err == nil {
			err = upTo("count", s.Count, MaxRequests, "requests in one run")
		}
		if err == nil && float64(s.Count)/s.Rate > MaxSpanS {
			// Arrival times are int64 ns: a tiny rate would overflow them.
			err = ferr("rate", "%g requests/s makes %d arrivals span about %.3g s of simulated time, more than %g s (30 years)", s.Rate, s.Count, float64(s.Count)/s.Rate, float64(MaxSpanS))
		}
	case "rollouts":
		if err = pos("prompts", s.Prompts); err == nil {
			if err = pos("rollouts_per_prompt", s.RolloutsPerPrompt); err == nil {
				err = pos("steps", s.Steps)
			}
		}
		if err == nil {
			err = upTo("prompts", s.Prompts, MaxGroup, "prompts per training step")
		}
		if err == nil {
			err = upTo("rollouts_per_prompt", s.RolloutsPerPrompt, MaxGroup, "rollouts per prompt")
		}
		if err == nil && int64(s.Prompts)*int64(s.RolloutsPerPrompt) > MaxGroup {
			err = ferr("rollouts_per_prompt", "prompts × rollouts_per_prompt = %d requests per training step, more than %d submitted at once", int64(s.Prompts)*int64(s.RolloutsPerPrompt), MaxGroup)
		}
		if err == nil && int64(s.Prompts)*int64(s.RolloutsPerPrompt)*int64(s.Steps) > MaxRequests {
			err = ferr("steps", "prompts × rollouts_per_prompt × steps = %d requests, more than %d in one run", int64(s.Prompts)*int64(s.RolloutsPerPrompt)*int64(s.Steps), MaxRequests)
		}
		if err == nil && (s.TrainTimeS < 0 || math.IsInf(s.TrainTimeS, 1)) {
			err = ferr("train_time_s", "must be a finite number >= 0, got %g", s.TrainTimeS)
		}
		if err == nil && s.TrainTimeS*float64(s.Steps) > MaxSpanS {
			err = ferr("train_time_s", "%g s × %d steps is more than %g s (30 years) of simulated time", s.TrainTimeS, s.Steps, float64(MaxSpanS))
		}
	case "sessions":
		if err = pos("sessions", s.Sessions); err == nil {
			err = pos("turns_per_session", s.TurnsPerSession)
		}
		if err == nil {
			err = upTo("sessions", s.Sessions, MaxGroup, "sessions starting at once")
		}
		if err == nil && int64(s.Sessions)*int64(s.TurnsPerSession) > MaxRequests {
			err = ferr("turns_per_session", "sessions × turns_per_session = %d requests, more than %d in one run", int64(s.Sessions)*int64(s.TurnsPerSession), MaxRequests)
		}
		if err == nil && (s.ThinkTimeS < 0 || math.IsInf(s.ThinkTimeS, 1) || s.ThinkTimeS != s.ThinkTimeS) {
			err = ferr("think_time_s", "must be a finite number >= 0, got %g", s.ThinkTimeS)
		}
		if err == nil && s.ThinkTimeS*float64(s.TurnsPerSession) > MaxSpanS {
			err = ferr("think_time_s", "%g s × %d turns is more than %g s (30 years) of simulated time", s.ThinkTimeS, s.TurnsPerSession, float64(MaxSpanS))
		}
		if err == nil && (s.SystemPromptTokens < 0 || s.SystemPromptTokens > math.MaxInt32) {
			err = ferr("system_prompt_tokens", "must be in 0..%d, got %d", math.MaxInt32, s.SystemPromptTokens)
		}
	case "synthetic":
		if !(s.Rate > 0) || math.IsInf(s.Rate, 1) {
			return ferr("rate", "must be a finite number > 0, got %g", s.Rate)
		}
		if err = pos("count", s.Count); err == nil {
			if err = pos("prompt_median", s.PromptMedian); err == nil {
				err = pos("output_median", s.OutputMedian)
			}
		}
		if err == nil {
			err = upTo("count", s.Count, MaxRequests, "requests in one run")
		}
		if err == nil && badScale(s.RateScale) {
			err = ferr("rate_scale", "must be a finite number > 0, got %g", s.RateScale)
		}
		rate := s.Rate
		if s.RateScale > 0 {
			rate *= s.RateScale
		}
		if err == nil && !(float64(s.Count)/rate <= MaxSpanS) {
			err = ferr("rate", "%g requests/s (× rate_scale) makes %d arrivals span about %.3g s of simulated time, more than %g s (30 years)", rate, s.Count, float64(s.Count)/rate, float64(MaxSpanS))
		}
		if err == nil && badScale(s.RateScale) {
			err = ferr("rate_scale", "must be a finite number > 0, got %g", s.RateScale)
		}
		if err == nil && s.Limit < 0 {
			err = ferr("limit", "must be >= 0, got %d", s.Limit)
		}
	case "trace":
		if s.Path == "" {
			return ferr("path", "missing: a trace workload needs a CSV or JSONL file")
		}
		if badScale(s.RateScale) {
			return ferr("rate_scale", "must be a finite number > 0, got %g", s.RateScale)
		}
		if s.Limit < 0 {
			return ferr("limit", "must be >= 0, got %d", s.Limit)
		}
		if s.Format != "" {
			if _, ok := trace.FormatByName(s.Format); !ok {
				return ferr("format", "unknown %q (want %s)", s.Format, strings.Join(trace.FormatNames(), ", "))
			}
		}
		switch s.TimeUnit {
		case "", "s", "ms", "us", "ns":
		default:
			return ferr("time_unit", "unknown %q (want s, ms, us or ns)", s.TimeUnit)
		}
		if s.HashBlockTokens < 0 || s.HashBlockTokens > math.MaxInt32 {
			return ferr("hash_block_tokens", "must be in 1..%d (0: the format's), got %d", math.MaxInt32, s.HashBlockTokens)
		}
	case "":
		return ferr("kind", "missing (want batches, poisson, rollouts, sessions, trace or synthetic)")
	default:
		return ferr("kind", "unknown %q (want batches, poisson, rollouts, sessions, trace or synthetic)", s.Kind)
	}
	if err != nil {
		return err
	}
	if err := s.inapplicable(); err != nil {
		return err
	}
	tr := s.Kind == "trace" || s.Kind == "synthetic"
	if s.RateScale != 0 && !tr {
		return ferr("rate_scale", "only trace and synthetic workloads replay at a scale (this is %s)", s.Kind)
	}
	if err := s.PromptLen.Validate(tr); err != nil {
		return &FieldError{Path: "prompt_len." + fieldOf(err), Err: errAfterField(err)}
	}
	if err := s.OutputLen.Validate(tr); err != nil {
		return &FieldError{Path: "output_len." + fieldOf(err), Err: errAfterField(err)}
	}
	return nil
}

// inapplicable refuses a key of another kind (batch_size on a poisson
// workload, path on anything but a trace): ignoring it would run
// something other than what was written. kind, prompt_len, output_len and
// strict apply to every kind; rate_scale has its own message below.
func (s *Spec) inapplicable() error {
	for _, k := range []struct {
		key   string
		set   bool
		kinds string
	}{
		{"num_prompts", s.NumPrompts != 0, "batches"},
		{"batch_size", s.BatchSize != 0, "batches"},
		{"rate", s.Rate != 0, "poisson synthetic"},
		{"count", s.Count != 0, "poisson synthetic"},
		{"prompts", s.Prompts != 0, "rollouts"},
		{"rollouts_per_prompt", s.RolloutsPerPrompt != 0, "rollouts"},
		{"steps", s.Steps != 0, "rollouts"},
		{"train_time_s", s.TrainTimeS != 0, "rollouts"},
		{"sessions", s.Sessions != 0, "sessions"},
		{"turns_per_session", s.TurnsPerSession != 0, "sessions"},
		{"think_time_s", s.ThinkTimeS != 0, "sessions"},
		{"system_prompt_tokens", s.SystemPromptTokens != 0, "sessions"},
		{"path", s.Path != "", "trace"},
		{"limit", s.Limit != 0, "trace synthetic"},
		{"format", s.Format != "", "trace"},
		{"time_field", s.TimeField != "", "trace"},
		{"prompt_field", s.PromptField != "", "trace"},
		{"output_field", s.OutputField != "", "trace"},
		{"time_unit", s.TimeUnit != "", "trace"},
		{"hash_field", s.HashField != "", "trace"},
		{"hash_block_tokens", s.HashBlockTokens != 0, "trace"},
		{"prompt_median", s.PromptMedian != 0, "synthetic"},
		{"output_median", s.OutputMedian != 0, "synthetic"},
	} {
		if k.set && !slices.Contains(strings.Fields(k.kinds), s.Kind) {
			return ferr(k.key, "does not apply to a %s workload (only %s read it): remove it", s.Kind, strings.Join(strings.Fields(k.kinds), " and "))
		}
	}
	return nil
}

// fieldOf/errAfterField split a "field: problem" error.
func fieldOf(err error) string {
	m := err.Error()
	for i := 0; i+1 < len(m); i++ {
		if m[i] == ':' && m[i+1] == ' ' {
			return m[:i]
		}
	}
	return ""
}

func errAfterField(err error) error {
	m := err.Error()
	f := fieldOf(err)
	if f == "" {
		return err
	}
	return errors.New(m[len(f)+2:])
}

// MaxSequence is the longest prompt + output the workload can draw (0 for
// lengths from a trace): a session's last turn holds every earlier turn.
func (s *Spec) MaxSequence() int64 {
	if s.Kind == "sessions" {
		return s.maxSessionTokens()
	}
	return int64(s.PromptLen.MaxValue()) + int64(s.OutputLen.MaxValue())
}

// Arrival is one request the workload submits.
type Arrival struct {
	At        sim.Time
	PromptLen int
	OutputLen int
	Group     int    // batch, training step or session; -1 for open-loop
	Seed      uint64 // prompt identity: rollouts of one prompt share it
	Line      int    // trace line, 0 otherwise
	// Prefix names the prompt's leading tokens that other requests may
	// share (a trace's hash_ids, a rollout's prompt, a session's history),
	// covering at most PromptLen; nil: the whole prompt is this request's
	// own. Read-only, and valid for the run (the source never reuses it).
	Prefix []statecache.Segment
	// OutputID is the content id of this request's own tokens: the
	// prompt's tokens past Prefix, then its output (the `unique` of
	// statecache.SegmentBlockHashes). No other request has it, but a later
	// one may name these tokens as Segment{OutputID, n}: a session's next
	// turn does, with n its output length (the turn's prompt is all Prefix).
	OutputID uint64
	// PrivateTail: no arrival names OutputID's tokens (a session's next
	// turn does), so the tokens past Prefix are this request's alone.
	PrivateTail bool
	// Reject is why the engine must refuse this trace record alone (a
	// trace.Reject* reason), with Why the reader's message; empty for a
	// request to serve.
	Reject, Why string
}

// Source yields arrivals in non-decreasing time order.
type Source interface {
	// Next returns the next arrival if its time is known now. ok is false
	// while a closed-loop source waits for its current group to finish,
	// and once it is exhausted (see Done).
	Next() (a Arrival, ok bool, err error)
	// Finished tells the source that a request of group g finished at now.
	Finished(g int, now sim.Time)
	// Done reports that no arrival will ever come again.
	Done() bool
	// Total is the number of requests the source will submit, or -1 when
	// unknown before the end (a trace).
	Total() int
}

// New builds the source for a spec. Lengths and arrival gaps draw from
// the "workload" stream; prompt seeds derive from the master seed.
func New(s *Spec, streams sim.Streams, baseDir string) (Source, error) {
	rng := streams.Stream("workload")
	switch s.Kind {
	case "batches":
		return &closedLoop{spec: s, rng: rng, seed: streams.Seed(), groups: ceilDiv(s.NumPrompts, s.BatchSize),
			size: func(g int) int { return min(s.BatchSize, s.NumPrompts-g*s.BatchSize) }, total: s.NumPrompts,
			prompt: func(g, i int) int { return g*s.BatchSize + i }}, nil
	case "rollouts":
		per := s.Prompts * s.RolloutsPerPrompt
		return &closedLoop{spec: s, rng: rng, seed: streams.Seed(), groups: s.Steps, gap: sim.FromSeconds(s.TrainTimeS),
			size: func(int) int { return per }, total: per * s.Steps, rollouts: s.RolloutsPerPrompt,
			prompt: func(g, i int) int { return g*s.Prompts + i/s.RolloutsPerPrompt }}, nil
	case "sessions":
		return newSessions(s, rng, streams.Seed()), nil
	case "poisson":
		return &poisson{spec: s, rng: rng, seed: streams.Seed()}, nil
	case "trace":
		return newTraceSource(s, rng, streams.Seed(), baseDir)
	case "synthetic":
		scale := s.RateScale
		if scale == 0 {
			scale = 1
		}
		gap := int64(1e9/(s.Rate*scale) + 0.5)
		r := trace.Synthetic(s.Count, sim.Mix(streams.Seed()^syntheticSalt), gap, s.PromptMedian, s.OutputMedian)
		return &traceSource{spec: s, rng: rng, seed: streams.Seed(), r: r}, nil
	}
	return nil, ferr("kind", "unknown %q", s.Kind)
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// closedLoop releases group g+1 when every request of group g finished.
type closedLoop struct {
	spec     *Spec
	rng      *rand.Rand
	seed     uint64
	groups   int
	size     func(g int) int
	prompt   func(g, i int) int // prompt index of the i-th request of group g
	rollouts int                // >0: rollouts of one prompt share its length
	total    int
	gap      sim.Time

	g, i      int // next request: i-th of group g
	released  bool
	at        sim.Time
	remaining int // unfinished requests of the current group
	lastLen   int
	n         int                  // requests submitted
	prefix    []statecache.Segment // rollouts: the current prompt, shared by its rollouts
	slab      segSlab
}

func (c *closedLoop) Total() int { return c.total }
func (c *closedLoop) Done() bool { return c.g >= c.groups }

func (c *closedLoop) Next() (Arrival, bool, error) {
	if c.g >= c.groups {
		return Arrival{}, false, nil
	}
	if !c.released {
		if c.g > 0 {
			return Arrival{}, false, nil
		}
		c.released, c.remaining = true, c.size(0)
	}
	if c.i >= c.size(c.g) {
		return Arrival{}, false, nil
	}
	p := c.prompt(c.g, c.i)
	if c.rollouts == 0 || c.i%c.rollouts == 0 {
		c.lastLen = c.spec.PromptLen.Draw(c.rng)
		if c.rollouts > 0 {
			// Every rollout of the prompt shares all of it.
			c.prefix = c.slab.take(1)
			c.prefix[0] = statecache.Segment{ID: contentID(promptSalt, c.seed, uint64(p)), Tokens: int32(c.lastLen)}
		}
	}
	a := Arrival{At: c.at, PromptLen: c.lastLen, OutputLen: c.spec.OutputLen.Draw(c.rng), Group: c.g,
		Seed: sim.Mix(c.seed ^ sim.Mix(uint64(p)+1)), Prefix: c.prefix, OutputID: outputID(c.seed, c.n), PrivateTail: true}
	c.i++
	c.n++
	return a, true, nil
}

func (c *closedLoop) Finished(g int, now sim.Time) {
	if g != c.g {
		return
	}
	c.remaining--
	if c.remaining > 0 || c.i < c.size(c.g) {
		return
	}
	c.g++
	c.i = 0
	if c.g < c.groups {
		c.remaining = c.size(c.g)
		c.at = now
		if c.rollouts > 0 {
			c.at = now + c.gap
		}
	}
}

type poisson struct {
	spec *Spec
	rng  *rand.Rand
	seed uint64
	n    int
	at   sim.Time
}

func (p *poisson) Total() int             { return p.spec.Count }
func (p *poisson) Done() bool             { return p.n >= p.spec.Count }
func (p *poisson) Finished(int, sim.Time) {}

func (p *poisson) Next() (Arrival, bool, error) {
	if p.n >= p.spec.Count {
		return Arrival{}, false, nil
	}
	if p.n > 0 {
		gap := p.rng.ExpFloat64() / p.spec.Rate
		if gap >= float64(math.MaxInt64-int64(p.at))/1e9 {
			// Validate bounds the expected span; one huge draw could still
			// pass the int64 ns clock.
			return Arrival{}, false, fmt.Errorf("poisson arrival %d: a gap of %.3g s overflows the simulated clock", p.n, gap)
		}
		p.at += sim.FromSeconds(gap)
	}
	a := Arrival{At: p.at, PromptLen: p.spec.PromptLen.Draw(p.rng), OutputLen: p.spec.OutputLen.Draw(p.rng),
		Group: -1, Seed: sim.Mix(p.seed ^ sim.Mix(uint64(p.n)+1)), OutputID: outputID(p.seed, p.n), PrivateTail: true}
	p.n++
	return a, true, nil
}

type traceSource struct {
	spec   *Spec
	rng    *rand.Rand
	seed   uint64
	r      trace.Reader
	ids    trace.HashIDReader // r, when its records may carry hash ids
	closer io.Closer
	n      int
	done   bool
	slab   segSlab
}

func newTraceSource(s *Spec, rng *rand.Rand, seed uint64, baseDir string) (*traceSource, error) {
	path := s.Path
	if baseDir != "" && !isAbs(path) {
		path = baseDir + "/" + path
	}
	opt := trace.Options{RateScale: s.RateScale, Format: s.Format, TimeField: s.TimeField,
		PromptField: s.PromptField, OutputField: s.OutputField, TimeUnit: s.TimeUnit,
		HashField: s.HashField, HashBlock: s.HashBlockTokens}
	if s.FS != nil {
		path = s.Path
	}
	r, c, err := trace.OpenFS(s.FS, path, opt)
	if err != nil {
		return nil, err
	}
	ids, _ := r.(trace.HashIDReader)
	return &traceSource{spec: s, rng: rng, seed: seed, r: r, ids: ids, closer: c}, nil
}

// maxTraceRequests bounds a trace's records (MaxRequests; a variable for
// tests).
var maxTraceRequests = MaxRequests

// syntheticSalt separates the synthetic trace's seed from the workload
// stream's, so both can derive from the scenario seed.
const syntheticSalt = 0x73796e7468

func isAbs(p string) bool { return len(p) > 0 && p[0] == '/' }

// Total is known for a synthetic trace; a file's is not until its end.
func (t *traceSource) Total() int {
	if t.spec.Kind != "synthetic" {
		return -1
	}
	if l := t.spec.Limit; l > 0 && l < t.spec.Count {
		return l
	}
	return t.spec.Count
}

func (t *traceSource) Done() bool             { return t.done }
func (t *traceSource) Finished(int, sim.Time) {}

func (t *traceSource) Next() (Arrival, bool, error) {
	if t.done {
		return Arrival{}, false, nil
	}
	if t.spec.Limit > 0 && t.n >= t.spec.Limit {
		t.finish()
		return Arrival{}, false, nil
	}
	rec, err := t.r.Next()
	if err == io.EOF {
		t.finish()
		return Arrival{}, false, nil
	}
	if err == nil && t.n >= maxTraceRequests {
		// A trace file (or a pipe) that never ends is bounded as a
		// count knob is: MaxRequests in one run.
		t.finish()
		return Arrival{}, false, &trace.ParseError{Name: t.spec.Path, Line: rec.Line, Err: fmt.Errorf("more than %d requests, the most a run replays (use workload.limit to replay a prefix)", maxTraceRequests)}
	}
	if err != nil {
		if rej, ok := err.(*trace.RejectError); ok && !t.spec.Strict {
			t.n++
			return Arrival{At: sim.Time(rec.ArrivalNS), Group: -1, Line: rec.Line, Reject: rej.Reason, Why: err.Error()}, true, nil
		}
		t.finish()
		return Arrival{}, false, err
	}
	if rec.OutputTokens == 0 && t.spec.Kind == "trace" && t.spec.OutputLen.Kind == "trace" {
		// vLLM refuses the request alone (trace.RejectEmptyOutput).
		why := fmt.Sprintf("%s:%d: 0 output tokens; vLLM refuses max_tokens < 1", t.spec.Path, rec.Line)
		t.n++
		if t.spec.Strict {
			t.finish()
			return Arrival{}, false, &trace.ParseError{Name: t.spec.Path, Line: rec.Line, Err: fmt.Errorf("0 output tokens; vLLM refuses max_tokens < 1 (workload.strict)")}
		}
		return Arrival{At: sim.Time(rec.ArrivalNS), Group: -1, Line: rec.Line, Reject: trace.RejectEmptyOutput, Why: why}, true, nil
	}
	a := Arrival{At: sim.Time(rec.ArrivalNS), PromptLen: rec.PromptTokens, OutputLen: max(rec.OutputTokens, 1),
		Group: -1, Seed: sim.Mix(t.seed ^ sim.Mix(uint64(t.n)+1)), Line: rec.Line, OutputID: outputID(t.seed, t.n), PrivateTail: true}
	if t.spec.PromptLen.Kind != "trace" {
		a.PromptLen = t.spec.PromptLen.Draw(t.rng)
	}
	if t.ids != nil {
		a.Prefix = t.slab.hashIDSegments(t.ids.HashIDs(), t.ids.HashBlock(), rec.PromptTokens, a.PromptLen)
	}
	if t.spec.OutputLen.Kind != "trace" {
		a.OutputLen = t.spec.OutputLen.Draw(t.rng)
	}
	t.n++
	return a, true, nil
}

func (t *traceSource) finish() {
	t.done = true
	if t.closer != nil {
		t.closer.Close()
		t.closer = nil
	}
}
