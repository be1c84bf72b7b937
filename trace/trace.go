package trace

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path/filepath"
	"strings"

	"statesim/internal/infile"
)

// Record is one request of a trace.
type Record struct {
	Line         int   // 1-based line number in the source file
	ArrivalNS    int64 // arrival time in ns relative to the FIRST record of the trace (first record = 0), after rate scaling
	PromptTokens int   // at least 1
	OutputTokens int   // may be 0; the caller clamps
}

// Reader yields records in file order; returns io.EOF at the end. After an
// error every later call returns the same error.
type Reader interface {
	Next() (Record, error)
}

// HashIDReader is a Reader whose records may name their prompt's content,
// as Mooncake's hash_ids do: HashIDs are the ids of the record Next last
// returned, the i-th standing for prompt tokens [i·HashBlock,
// (i+1)·HashBlock) (the last may cover fewer), so two records share their
// first k·HashBlock tokens when their first k ids agree. nil when the
// record has none; the slice is valid until the next call to Next.
type HashIDReader interface {
	Reader
	HashIDs() []uint64
	HashBlock() int
}

// MooncakeHashBlock is the number of prompt tokens one of Mooncake's
// hash_ids stands for (its traces' README: each id is a 512-token block).
const MooncakeHashBlock = 512

// Options tune how a trace is read. The zero value reads at recorded speed
// with the format's default field names and seconds.
type Options struct {
	RateScale float64 // >0; arrival offsets are DIVIDED by RateScale (2 = twice the load). 0 means 1.
	// Format names a public trace layout whose field names and time unit
	// are the defaults (see Formats); "" picks by extension and, for CSV,
	// by the header.
	Format string
	// Field names: CSV column names or JSONL keys (a dotted key such as
	// "usage.prompt_tokens" reaches into nested objects). Empty: the
	// format's.
	TimeField, PromptField, OutputField string
	// TimeUnit of a numeric timestamp: "s", "ms", "us" or "ns" (default:
	// the format's, else "s"). Date-time timestamps carry their own.
	TimeUnit string
	// HashField is the JSONL key of a record's content ids, one per
	// HashBlock prompt tokens (Mooncake's hash_ids); empty: the format's
	// (mooncake: hash_ids, 512), else none are read. JSONL only.
	HashField string
	HashBlock int
}

// Format is a public trace layout: its field names and time unit.
type Format struct {
	Name                           string
	TimeField, PromptField, Output string
	TimeUnit                       string
	JSONL                          bool
	// HashField names the content ids of the prompt's HashBlock-token
	// chunks, where the layout has them.
	HashField string
	HashBlock int
}

// Formats are the layouts known by name. Azure's traces (2023 and the
// 2024 week-long ones) stamp each request with a date-time; BurstGPT with
// seconds since the trace began; Mooncake's JSONL with milliseconds.
var Formats = []Format{
	{Name: "azure", TimeField: "TIMESTAMP", PromptField: "ContextTokens", Output: "GeneratedTokens", TimeUnit: "s"},
	{Name: "burstgpt", TimeField: "Timestamp", PromptField: "Request tokens", Output: "Response tokens", TimeUnit: "s"},
	{Name: "mooncake", TimeField: "timestamp", PromptField: "input_length", Output: "output_length", TimeUnit: "ms", JSONL: true,
		HashField: "hash_ids", HashBlock: MooncakeHashBlock},
	{Name: "jsonl", TimeField: "timestamp", PromptField: "input_tokens", Output: "output_tokens", TimeUnit: "s", JSONL: true},
}

// FormatByName looks a format up; ok is false for an unknown name.
func FormatByName(name string) (Format, bool) {
	for _, f := range Formats {
		if f.Name == name {
			return f, true
		}
	}
	return Format{}, false
}

// FormatNames lists the known formats.
func FormatNames() []string {
	out := make([]string, len(Formats))
	for i, f := range Formats {
		out[i] = f.Name
	}
	return out
}

// Rejection reasons: a record the engine refuses on its own, as vLLM
// refuses one bad request and serves the rest.
const (
	RejectEmptyPrompt = "empty_prompt" // 0 prompt tokens
	RejectOutOfOrder  = "out_of_order" // timestamp earlier than the previous record's
	// RejectEmptyOutput is a record asking for 0 output tokens, where the
	// workload reads output lengths from the trace: vLLM refuses
	// max_tokens < 1 (SamplingParams._verify_args,
	// vllm/sampling_params.py@00388f65). Rejected by the workload, which
	// knows whether the output column is used.
	RejectEmptyOutput = "empty_output"
)

// RejectError is a record that is well formed but cannot be served. The
// reader stays usable: the next call reads the next record.
type RejectError struct {
	Reason string
	*ParseError
}

func (e *RejectError) Unwrap() error { return e.ParseError }

// ParseError is a bad line of a trace, printed NAME:LINE: field FIELD: problem.
type ParseError struct {
	Name  string // file name as given to the reader
	Line  int    // 1-based
	Field string // column or key at fault; empty when the whole line is
	Err   error
}

func (e *ParseError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s:%d: %v", e.Name, e.Line, e.Err)
	}
	return fmt.Sprintf("%s:%d: field %s: %v", e.Name, e.Line, e.Field, e.Err)
}

func (e *ParseError) Unwrap() error { return e.Err }

// Open opens path and picks the reader by extension: .csv is CSV (Azure,
// BurstGPT or mapped columns), .jsonl and .ndjson are JSON Lines; a
// further .gz is gunzipped. Close the returned Closer when done.
func Open(path string, opt Options) (Reader, io.Closer, error) {
	return OpenFS(nil, path, opt)
}

// OpenFS is Open reading from fsys (nil: the operating system's files).
func OpenFS(fsys fs.FS, path string, opt Options) (Reader, io.Closer, error) {
	inner := strings.TrimSuffix(strings.TrimSuffix(path, ".gz"), ".GZ")
	gz := inner != path
	var open func(io.Reader, string, Options) (Reader, error)
	switch ext := strings.ToLower(filepath.Ext(inner)); ext {
	case ".csv":
		open = NewCSV
	case ".jsonl", ".ndjson":
		open = NewJSONL
	default:
		return nil, nil, fmt.Errorf("trace %s: unknown extension %q; want .csv, .jsonl or .ndjson, optionally .gz", path, ext)
	}
	var f io.ReadCloser
	var err error
	if fsys != nil {
		f, err = fsys.Open(path)
	} else {
		f, err = infile.Open(path) // a FIFO without a writer must not hang
	}
	if err != nil {
		return nil, nil, err
	}
	var src io.Reader = f
	closer := io.Closer(f)
	if gz {
		in := &infile.Counter{R: f}
		z, err := gzip.NewReader(in)
		if err != nil {
			f.Close()
			return nil, nil, &ParseError{Name: path, Line: 1, Err: fmt.Errorf("not gzip: %v", err)}
		}
		src, closer = &infile.ExpansionReader{R: z, In: in, Ratio: MaxGzipRatio, Slack: gzipSlack}, multiCloser{z, f}
	}
	r, err := open(src, path, opt)
	if err != nil {
		closer.Close()
		return nil, nil, err
	}
	return r, closer, nil
}

// MaxGzipRatio bounds how far a gzipped trace may expand: real traces'
// rows compress about 4 times (both built-in traces), a crafted file up
// to gzip's 1032. Past it the trace is refused rather than read as
// gigabytes of rows from a small file.
const MaxGzipRatio = 64

// gzipSlack lets a small file expand past the ratio (a header, a short
// trace of identical rows).
var gzipSlack int64 = 1 << 20

type multiCloser []io.Closer

func (m multiCloser) Close() error {
	var first error
	for _, c := range m {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// rateScale validates Options.RateScale; 0 means recorded speed.
func (o Options) rateScale(name string) (float64, error) {
	s := o.RateScale
	if s == 0 {
		return 1, nil
	}
	if !(s > 0) || math.IsInf(s, 1) {
		return 0, fmt.Errorf("trace %s: RateScale %v must be a finite number > 0", name, s)
	}
	return s, nil
}

var (
	errBackwards = errors.New("earlier than the previous record")
	errSpan      = errors.New("too far after the first record for int64 ns")
)

// clock turns absolute timestamps into scaled offsets from the first record
// and refuses time that runs backwards, which would reorder arrivals.
type clock struct {
	scale    float64
	first    int64
	prev     int64
	prevLine int
	started  bool
}

func (c *clock) arrival(abs int64, line int) (int64, error) {
	if !c.started {
		c.started, c.first, c.prev, c.prevLine = true, abs, abs, line
		return 0, nil
	}
	if abs < c.prev {
		return 0, errBackwards
	}
	d := abs - c.first
	if d < 0 { // wrapped: the span does not fit in int64 ns
		return 0, errSpan
	}
	c.prev, c.prevLine = abs, line
	if c.scale == 1 {
		return d, nil
	}
	f := math.Round(float64(d) / c.scale)
	if f >= math.MaxInt64 {
		return 0, errSpan
	}
	return int64(f), nil
}

// explain words an arrival error about the timestamp shown as value.
func (c *clock) explain(value string, err error) error {
	if err == errBackwards {
		return fmt.Errorf("%s is %w (line %d)", value, err, c.prevLine)
	}
	return fmt.Errorf("%s is %w", value, err)
}

// show quotes a field for an error message, cut short so a garbage line
// cannot make a huge one.
func show(b []byte) string {
	const max = 64
	if len(b) > max {
		return fmt.Sprintf("%q...", b[:max])
	}
	return fmt.Sprintf("%q", b)
}

// maxCount bounds token counts: anything larger is corrupt, and refusing it
// keeps the simulator's token arithmetic far from overflow.
const maxCount = math.MaxInt32

// parseCount reads a non-negative decimal integer no larger than maxCount;
// a fraction of zeros ("100.0", as tools that write every number as a
// float do) is the integer, any other fraction an error.
func parseCount(b []byte) (int, string) {
	if i := bytes.IndexByte(b, '.'); i > 0 && i < len(b)-1 && len(bytes.Trim(b[i+1:], "0")) == 0 {
		b = b[:i]
	}
	if len(b) == 0 {
		return 0, "is not a non-negative integer"
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, "is not a non-negative integer"
		}
		n = n*10 + int(c-'0')
		if n > maxCount {
			return 0, "is out of range (max 2147483647)"
		}
	}
	return n, ""
}
