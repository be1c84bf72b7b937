package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"
)

type jsonl struct {
	name    string
	lines   lines
	clock   clock
	fields  [nCols]string // time, prompt, output keys
	unitExp int           // TimeUnit as a power of ten of ns
	obj     map[string]json.RawMessage
	stringT bool // the first record's timestamp was an RFC3339 string
	// hashField/hashBlock: the content-id key and its tokens per id ("":
	// none read); ids the last record's, hasIDs whether it had them.
	hashField string
	hashBlock int
	// hashNamed: the caller named hashField (HashField), so a first
	// record without it is a misspelt key, not a trace without ids.
	hashNamed bool
	ids       []uint64
	hasIDs    bool
	records   int
	err       error // sticky
}

var unitExps = map[string]int{"s": 9, "ms": 6, "us": 3, "ns": 0}

// NewJSONL reads JSON Lines from r: one object per line, with the time,
// prompt and output keys named by opt (or its format: jsonl's
// timestamp, input_tokens, output_tokens by default; mooncake's
// timestamp in ms, input_length, output_length). A dotted key
// ("usage.prompt_tokens") reaches into nested objects when the object has
// no key of that literal name. A numeric timestamp is in the time unit
// and converted exactly (digits beyond 1 ns are dropped); a string one
// is RFC3339. One trace must not mix the two. Token counts are
// non-negative integers (100.0 counts as 100). name prefixes error
// messages.
func NewJSONL(r io.Reader, name string, opt Options) (Reader, error) {
	scale, err := opt.rateScale(name)
	if err != nil {
		return nil, err
	}
	f, _ := FormatByName("jsonl")
	if opt.Format != "" {
		var ok bool
		if f, ok = FormatByName(opt.Format); !ok || !f.JSONL {
			return nil, fmt.Errorf("trace %s: unknown JSONL format %q (want jsonl or mooncake)", name, opt.Format)
		}
	}
	unit := or(opt.TimeUnit, f.TimeUnit)
	exp, ok := unitExps[unit]
	if !ok {
		return nil, fmt.Errorf("trace %s: TimeUnit %q; want s, ms, us or ns", name, unit)
	}
	j := &jsonl{name: name, lines: newLines(r), clock: clock{scale: scale}, unitExp: exp,
		fields: [nCols]string{
			or(opt.TimeField, f.TimeField),
			or(opt.PromptField, f.PromptField),
			or(opt.OutputField, f.Output),
		}}
	j.hashField, j.hashBlock = or(opt.HashField, f.HashField), opt.HashBlock
	j.hashNamed = opt.HashField != ""
	if j.hashBlock == 0 {
		j.hashBlock = f.HashBlock
	}
	if j.hashBlock == 0 {
		j.hashBlock = MooncakeHashBlock
	}
	if j.hashBlock < 0 {
		return nil, fmt.Errorf("trace %s: HashBlock %d must be > 0", name, j.hashBlock)
	}
	return j, nil
}

// HashIDs are the last record's content ids (see HashIDReader).
func (j *jsonl) HashIDs() []uint64 {
	if !j.hasIDs {
		return nil
	}
	return j.ids
}

// HashBlock is the number of prompt tokens one id stands for.
func (j *jsonl) HashBlock() int { return j.hashBlock }

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func (j *jsonl) fail(field string, err error) error {
	return &ParseError{Name: j.name, Line: j.lines.n, Field: field, Err: err}
}

func (j *jsonl) Next() (Record, error) {
	if j.err != nil {
		return Record{}, j.err
	}
	rec, err := j.next()
	if _, rejected := err.(*RejectError); err != nil && !rejected {
		j.err = err
	}
	return rec, err
}

func (j *jsonl) next() (Record, error) {
	var line []byte
	for len(line) == 0 { // blank lines carry no record
		var err error
		line, err = j.lines.next()
		if err == io.EOF {
			if j.records == 0 {
				j.lines.n++
				return Record{}, j.fail("", errors.New("no records"))
			}
			return Record{}, io.EOF
		}
		if err == errLong {
			return Record{}, j.fail("", err)
		}
		if err != nil {
			return Record{}, j.fail("", fmt.Errorf("read: %w", err))
		}
		line = bytes.TrimSpace(line)
	}
	if line[0] != '{' {
		return Record{}, j.fail("", fmt.Errorf("not a JSON object: %s", show(line)))
	}
	clear(j.obj)
	if err := json.Unmarshal(line, &j.obj); err != nil {
		return Record{}, j.fail("", fmt.Errorf("invalid JSON: %v", err))
	}

	tf := j.fields[colTime]
	raw, ok := j.get(tf)
	if !ok {
		return Record{}, j.fail(tf, errors.New("missing"))
	}
	abs, isString, err := j.timestamp(raw)
	if err != nil {
		return Record{}, j.fail(tf, err)
	}
	if j.records == 0 {
		j.stringT = isString
	} else if isString != j.stringT {
		return Record{}, j.fail(tf, fmt.Errorf("%s mixes RFC3339 strings and numbers in one trace", showJSON(raw)))
	}
	prompt, err := j.count(colPrompt)
	if err != nil {
		return Record{}, err
	}
	output, err := j.count(colOutput)
	if err != nil {
		return Record{}, err
	}
	if err := j.hashIDs(prompt); err != nil {
		return Record{}, err
	}
	j.records++ // a record, served or rejected
	at, err := j.clock.arrival(abs, j.lines.n)
	if err == errBackwards {
		return Record{Line: j.lines.n}, j.reject(RejectOutOfOrder, tf, j.clock.explain(showJSON(raw), err))
	}
	if err != nil {
		return Record{}, j.fail(tf, j.clock.explain(showJSON(raw), err))
	}
	if prompt == 0 {
		return Record{Line: j.lines.n, ArrivalNS: at}, j.reject(RejectEmptyPrompt, j.fields[colPrompt], errors.New("0 tokens; a prompt needs at least 1"))
	}
	return Record{Line: j.lines.n, ArrivalNS: at, PromptTokens: prompt, OutputTokens: output}, nil
}

func (j *jsonl) reject(reason, field string, err error) error {
	return &RejectError{Reason: reason, ParseError: &ParseError{Name: j.name, Line: j.lines.n, Field: field, Err: err}}
}

// get finds key in the line's object: the literal key, else a dotted path
// through nested objects.
func (j *jsonl) get(key string) (json.RawMessage, bool) {
	if raw, ok := j.obj[key]; ok {
		return raw, true
	}
	first, rest, dotted := strings.Cut(key, ".")
	if !dotted {
		return nil, false
	}
	raw, ok := j.obj[first]
	for ok {
		var inner map[string]json.RawMessage
		if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &inner) != nil {
			return nil, false
		}
		if raw, ok = inner[rest]; ok {
			return raw, true
		}
		first, rest, dotted = strings.Cut(rest, ".")
		if !dotted {
			return nil, false
		}
		raw, ok = inner[first]
	}
	return nil, false
}

func (j *jsonl) count(col int) (int, error) {
	key := j.fields[col]
	raw, ok := j.get(key)
	if !ok {
		return 0, j.fail(key, errors.New("missing"))
	}
	n, why := parseCount(raw)
	if why != "" {
		return 0, j.fail(key, fmt.Errorf("%s %s", showJSON(raw), why))
	}
	return n, nil
}

// hashIDs reads the record's content ids, if the trace names them: a JSON
// array of non-negative integers, one per hashBlock prompt tokens, the last
// covering the rest (input_length − hashBlock·(n−1) tokens). A missing key
// or null means none: the record shares nothing.
func (j *jsonl) hashIDs(prompt int) error {
	j.hasIDs, j.ids = false, j.ids[:0]
	if j.hashField == "" {
		return nil
	}
	raw, ok := j.get(j.hashField)
	if !ok && j.hashNamed && j.records == 0 {
		keys := make([]string, 0, len(j.obj))
		for k := range j.obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return j.fail(j.hashField, fmt.Errorf("not in the first record (its keys: %s): a misspelt hash_field would share no prefix", strings.Join(keys, ", ")))
	}
	if !ok || string(raw) == "null" {
		return nil
	}
	ids, why := parseIDs(j.ids, raw)
	if why != "" {
		return j.fail(j.hashField, fmt.Errorf("%s %s", showJSON(raw), why))
	}
	j.ids, j.hasIDs = ids, true
	if want := (prompt + j.hashBlock - 1) / j.hashBlock; prompt > 0 && len(ids) != want {
		return j.fail(j.hashField, fmt.Errorf("%d ids for a %d-token prompt; at %d tokens an id it needs %d", len(ids), prompt, j.hashBlock, want))
	}
	return nil
}

// parseIDs appends the integers of a JSON array to ids, without
// allocating beyond ids' growth; why is non-empty when raw is not an array
// of integers in 0..2^64−1.
func parseIDs(ids []uint64, raw []byte) ([]uint64, string) {
	const notArray = "is not an array of non-negative integers"
	i := 0
	space := func() {
		for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
			i++
		}
	}
	space()
	if i == len(raw) || raw[i] != '[' {
		return ids, notArray
	}
	i++
	space()
	if i < len(raw) && raw[i] == ']' {
		i++
		space()
		if i != len(raw) {
			return ids, notArray
		}
		return ids, ""
	}
	for {
		space()
		start := i
		var v uint64
		for ; i < len(raw) && raw[i] >= '0' && raw[i] <= '9'; i++ {
			d := uint64(raw[i] - '0')
			if v > (math.MaxUint64-d)/10 {
				return ids, fmt.Sprintf("has an id out of range (element %d)", len(ids))
			}
			v = v*10 + d
		}
		if i == start || (raw[start] == '0' && i-start > 1) {
			return ids, fmt.Sprintf("%s (element %d)", notArray, len(ids))
		}
		ids = append(ids, v)
		space()
		if i == len(raw) {
			return ids, notArray
		}
		if raw[i] == ']' {
			i++
			space()
			if i != len(raw) {
				return ids, notArray
			}
			return ids, ""
		}
		if raw[i] != ',' {
			return ids, fmt.Sprintf("%s (element %d)", notArray, len(ids)-1)
		}
		i++
	}
}

// timestamp reads a JSON number in the trace's unit or an RFC3339 string as
// ns since the Unix epoch.
func (j *jsonl) timestamp(raw json.RawMessage) (int64, bool, error) {
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, true, fmt.Errorf("%s is not a string: %v", showJSON(raw), err)
		}
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return 0, true, fmt.Errorf("%s is not an RFC3339 time", showJSON(raw))
		}
		if y := t.Year(); y < 1678 || y > 2261 { // int64 ns range
			return 0, true, fmt.Errorf("%s: year outside 1678-2261", showJSON(raw))
		}
		return t.UnixNano(), true, nil
	}
	ns, why := decimalNS(raw, j.unitExp)
	if why != "" {
		return 0, false, fmt.Errorf("%s %s", showJSON(raw), why)
	}
	return ns, false, nil
}

// showJSON prints a JSON value, already quoted where it needs to be, cut
// short for an error message.
func showJSON(raw []byte) string {
	const max = 64
	if len(raw) > max {
		return string(raw[:max]) + "..."
	}
	return string(raw)
}

// decimalNS converts a JSON number times 10^unitExp to integer ns exactly,
// truncating below 1 ns: through float64, Unix times in seconds would lose
// the sub-microsecond digits.
func decimalNS(b []byte, unitExp int) (int64, string) {
	const notNumber = "is not a number or an RFC3339 string"
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	var mant uint64 // at most 19 significant digits, which always fit
	sig, exp, digits := 0, 0, 0
	i := 0
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		digits++
		if sig < 19 {
			mant = mant*10 + uint64(b[i]-'0')
			if mant > 0 {
				sig++
			}
		} else {
			exp++ // dropped integer digit: the value is too large anyway
		}
	}
	if i < len(b) && b[i] == '.' {
		for i++; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			digits++
			if sig < 19 {
				mant = mant*10 + uint64(b[i]-'0')
				if mant > 0 {
					sig++
				}
				exp--
			} // further fraction digits are below 1 ns once 19 are kept
		}
	}
	if digits == 0 {
		return 0, notNumber
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		eneg := false
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			eneg = b[i] == '-'
			i++
		}
		if i == len(b) {
			return 0, notNumber
		}
		e := 0
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			if e < 1000 { // beyond this the answer is 0 or overflow either way
				e = e*10 + int(b[i]-'0')
			}
		}
		if eneg {
			e = -e
		}
		exp += e
	}
	if i != len(b) {
		return 0, notNumber
	}
	exp += unitExp
	if mant == 0 {
		return 0, ""
	}
	for ; exp < 0 && mant > 0; exp++ {
		mant /= 10
	}
	for ; exp > 0; exp-- {
		if mant > math.MaxInt64/10 {
			return 0, "is out of range"
		}
		mant *= 10
	}
	if mant > math.MaxInt64 {
		return 0, "is out of range"
	}
	if neg {
		return -int64(mant), ""
	}
	return int64(mant), ""
}
