package trace

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
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

// Options tune how a trace is read. The zero value reads at recorded speed
// with the default JSONL field names and seconds.
type Options struct {
	RateScale float64 // >0; arrival offsets are DIVIDED by RateScale (2 = twice the load). 0 means 1.
	// JSONL field names (defaults "timestamp", "input_tokens", "output_tokens").
	// The Azure CSV columns are fixed by its format and ignore these.
	TimeField, PromptField, OutputField string
	// JSONL time unit of TimeField when numeric: "s" (default), "ms", "us", "ns".
	TimeUnit string
}

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

// Open opens path and picks the reader by extension: .csv is the Azure CSV,
// .jsonl and .ndjson are JSON Lines. Close the returned Closer when done.
func Open(path string, opt Options) (Reader, io.Closer, error) {
	var open func(io.Reader, string, Options) (Reader, error)
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".csv":
		open = NewAzureCSV
	case ".jsonl", ".ndjson":
		open = NewJSONL
	default:
		return nil, nil, fmt.Errorf("trace %s: unknown extension %q; want .csv, .jsonl or .ndjson", path, ext)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	r, err := open(f, path, opt)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return r, f, nil
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

// parseCount reads a non-negative decimal integer no larger than maxCount.
func parseCount(b []byte) (int, string) {
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
