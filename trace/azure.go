package trace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Roles of the columns a record needs.
const (
	colTime = iota
	colPrompt
	colOutput
	nCols
)

var roleNames = [nCols]string{"time", "prompt", "output"}

var azureHeader = "TIMESTAMP,ContextTokens,GeneratedTokens"

type csvReader struct {
	name    string
	lines   lines
	clock   clock
	unitExp int
	names   [nCols]string // the mapped column names
	col     [nCols]int    // col[role] is the file's column holding it
	header  []string
	fields  [][]byte // reused per line
	numeric bool     // the first record's time was a number, not a date-time
	records int
	err     error // sticky
}

// NewAzureCSV is NewCSV; the name is kept for the Azure traces it was
// written for.
func NewAzureCSV(r io.Reader, name string, opt Options) (Reader, error) { return NewCSV(r, name, opt) }

// NewCSV reads a CSV trace from r, checking the header now. Columns are
// found by header name, in any order; columns the mapping does not name
// are ignored. Without opt's field names or format, the header picks the
// layout: Azure (TIMESTAMP,ContextTokens,GeneratedTokens) or BurstGPT
// (Timestamp,Request tokens,Response tokens). A timestamp is either a
// date-time "YYYY-MM-DD HH:MM:SS[.f][Z|±HH:MM]" (UTC without an offset)
// or a number in the time unit; one trace must not mix them. Fields are
// not quoted. name prefixes error messages.
func NewCSV(r io.Reader, name string, opt Options) (Reader, error) {
	scale, err := opt.rateScale(name)
	if err != nil {
		return nil, err
	}
	if opt.HashField != "" {
		return nil, fmt.Errorf("trace %s: hash ids (%s) are read from JSONL traces only", name, opt.HashField)
	}
	a := &csvReader{name: name, lines: newLines(r), clock: clock{scale: scale}}
	if err := a.readHeader(opt); err != nil {
		return nil, err
	}
	return a, nil
}

func (a *csvReader) fail(field string, err error) error {
	return &ParseError{Name: a.name, Line: a.lines.n, Field: field, Err: err}
}

func (a *csvReader) reject(reason, field string, err error) error {
	return &RejectError{Reason: reason, ParseError: &ParseError{Name: a.name, Line: a.lines.n, Field: field, Err: err}}
}

func (a *csvReader) readErr(err error) error {
	if err != errLong {
		err = fmt.Errorf("read: %w", err)
	}
	return a.fail("", err)
}

// csvFormats are the layouts a header can select on its own.
func csvFormats() []Format {
	var out []Format
	for _, f := range Formats {
		if !f.JSONL {
			out = append(out, f)
		}
	}
	return out
}

func (a *csvReader) readHeader(opt Options) error {
	line, err := a.lines.next()
	if err == io.EOF {
		a.lines.n = 1
		return a.fail("", fmt.Errorf("empty file; want header %s", azureHeader))
	}
	if err != nil {
		return a.readErr(err)
	}
	line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf")) // spreadsheet BOM
	if len(line) == 0 || line[0] >= '0' && line[0] <= '9' {
		return a.fail("", fmt.Errorf("missing header: want %s, got %s", azureHeader, show(line)))
	}
	for _, n := range strings.Split(string(line), ",") {
		a.header = append(a.header, strings.Trim(strings.TrimSpace(n), `"`))
	}
	a.fields = make([][]byte, len(a.header))

	var f Format
	switch {
	case opt.Format != "":
		var ok bool
		if f, ok = FormatByName(opt.Format); !ok || f.JSONL {
			return a.fail("", fmt.Errorf("unknown CSV format %q (want azure or burstgpt)", opt.Format))
		}
	case opt.TimeField != "" || opt.PromptField != "" || opt.OutputField != "":
		f = csvFormats()[0]
	default:
		f = csvFormats()[0]
		for _, c := range csvFormats() {
			if a.index(c.TimeField) >= 0 && a.index(c.PromptField) >= 0 && a.index(c.Output) >= 0 {
				f = c
				break
			}
		}
	}
	a.names = [nCols]string{or(opt.TimeField, f.TimeField), or(opt.PromptField, f.PromptField), or(opt.OutputField, f.Output)}
	unit := or(opt.TimeUnit, f.TimeUnit)
	exp, ok := unitExps[unit]
	if !ok {
		return fmt.Errorf("trace %s: TimeUnit %q; want s, ms, us or ns", a.name, unit)
	}
	a.unitExp = exp
	for role, n := range a.names {
		a.col[role] = -1
		for i, h := range a.header {
			if h != n {
				continue
			}
			if a.col[role] >= 0 {
				return a.fail(n, errors.New("duplicate column in header"))
			}
			a.col[role] = i
		}
		if a.col[role] < 0 {
			return a.fail(n, fmt.Errorf("missing from header %s (name the %s column with %s_field)", show(line), roleNames[role], roleNames[role]))
		}
	}
	return nil
}

func (a *csvReader) index(name string) int {
	for i, h := range a.header {
		if h == name {
			return i
		}
	}
	return -1
}

func (a *csvReader) Next() (Record, error) {
	if a.err != nil {
		return Record{}, a.err
	}
	rec, err := a.next()
	if _, rejected := err.(*RejectError); err != nil && !rejected {
		a.err = err
	}
	return rec, err
}

func (a *csvReader) next() (Record, error) {
	var line []byte
	for len(line) == 0 { // blank lines carry no record
		var err error
		line, err = a.lines.next()
		if err == io.EOF {
			if a.records == 0 {
				a.lines.n++
				return Record{}, a.fail("", errors.New("no records after the header"))
			}
			return Record{}, io.EOF
		}
		if err != nil {
			return Record{}, a.readErr(err)
		}
	}
	a.records++ // a record, served or rejected

	n := len(a.header)
	col := 0
	for rest := line; ; col++ {
		if col == n {
			return Record{}, a.fail("", fmt.Errorf("%d columns, header has %d", bytes.Count(line, []byte(","))+1, n))
		}
		i := bytes.IndexByte(rest, ',')
		if i < 0 {
			a.fields[col] = rest
			col++
			break
		}
		a.fields[col], rest = rest[:i], rest[i+1:]
	}
	if col < n {
		return Record{}, a.fail(a.header[col], fmt.Errorf("missing (%d of %d columns)", col, n))
	}
	tf, pf, of := a.fields[a.col[colTime]], a.fields[a.col[colPrompt]], a.fields[a.col[colOutput]]

	var abs int64
	numeric := !looksLikeDate(tf)
	if numeric {
		var why string
		if abs, why = decimalNS(tf, a.unitExp); why != "" {
			if _, layout := parseTimestamp(tf); why != "is out of range" {
				why = "is not a number or a timestamp YYYY-MM-DD HH:MM:SS[.fffffffff][Z|±HH:MM]: " + layout
			}
			return Record{}, a.fail(a.names[colTime], fmt.Errorf("%s %s", show(tf), why))
		}
	} else {
		var why string
		if abs, why = parseTimestamp(tf); why != "" {
			return Record{}, a.fail(a.names[colTime], fmt.Errorf("%s is not a timestamp YYYY-MM-DD HH:MM:SS[.fffffffff][Z|±HH:MM]: %s", show(tf), why))
		}
	}
	if a.records == 1 {
		a.numeric = numeric
	} else if numeric != a.numeric {
		return Record{}, a.fail(a.names[colTime], fmt.Errorf("%s mixes date-times and numbers in one trace", show(tf)))
	}
	prompt, why := parseCount(pf)
	if why != "" {
		return Record{}, a.fail(a.names[colPrompt], fmt.Errorf("%s %s", show(pf), why))
	}
	output, why := parseCount(of)
	if why != "" {
		return Record{}, a.fail(a.names[colOutput], fmt.Errorf("%s %s", show(of), why))
	}
	at, err := a.clock.arrival(abs, a.lines.n)
	if err == errBackwards {
		return Record{Line: a.lines.n}, a.reject(RejectOutOfOrder, a.names[colTime], a.clock.explain(show(tf), err))
	}
	if err != nil {
		return Record{}, a.fail(a.names[colTime], a.clock.explain(show(tf), err))
	}
	if prompt == 0 {
		return Record{Line: a.lines.n, ArrivalNS: at}, a.reject(RejectEmptyPrompt, a.names[colPrompt], errors.New("0 tokens; a prompt needs at least 1"))
	}
	return Record{Line: a.lines.n, ArrivalNS: at, PromptTokens: prompt, OutputTokens: output}, nil
}

// looksLikeDate tells a date-time ("2024-05-12 ...") from a number.
func looksLikeDate(b []byte) bool { return len(b) >= 10 && b[4] == '-' && b[7] == '-' }

// parseTimestamp reads "YYYY-MM-DD HH:MM:SS[.f]" (a 'T' may stand for the
// space) as ns since the Unix epoch in UTC, by hand: time.Parse per line
// would dominate a replay. On failure it returns a static reason.
func parseTimestamp(b []byte) (int64, string) {
	if len(b) < 19 || b[4] != '-' || b[7] != '-' || (b[10] != ' ' && b[10] != 'T') || b[13] != ':' || b[16] != ':' {
		return 0, "bad layout"
	}
	year, ok1 := fixed(b[0:4])
	month, ok2 := fixed(b[5:7])
	day, ok3 := fixed(b[8:10])
	hour, ok4 := fixed(b[11:13])
	min, ok5 := fixed(b[14:16])
	sec, ok6 := fixed(b[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) {
		return 0, "bad layout"
	}
	// int64 ns since 1970 spans 1677-09-21 to 2262-04-11.
	if year < 1678 || year > 2261 {
		return 0, "year outside 1678-2261"
	}
	if month < 1 || month > 12 {
		return 0, "month out of range"
	}
	if day < 1 || day > daysIn(year, month) {
		return 0, "day out of range"
	}
	if hour > 23 || min > 59 || sec > 59 {
		return 0, "time of day out of range"
	}
	var frac int64
	rest := b[19:]
	if len(rest) > 0 && rest[0] == '.' {
		end := 1
		for end < len(rest) && rest[end] != 'Z' && rest[end] != '+' && rest[end] != '-' {
			end++
		}
		digits := rest[1:end]
		if len(digits) == 0 || len(digits) > 9 {
			return 0, "want 1 to 9 fractional digits"
		}
		f, ok := fixed(digits)
		if !ok {
			return 0, "bad fractional seconds"
		}
		frac = int64(f) * pow10[9-len(digits)]
		rest = rest[end:]
	}
	offset, why := zoneOffset(rest)
	if why != "" {
		return 0, why
	}
	secs := daysFromCivil(year, month, day)*86400 + int64(hour*3600+min*60+sec) - offset
	return secs*1e9 + frac, ""
}

// zoneOffset reads "", "Z", "±HH", "±HHMM" or "±HH:MM" as seconds east
// of UTC.
func zoneOffset(b []byte) (int64, string) {
	if len(b) == 0 || len(b) == 1 && b[0] == 'Z' {
		return 0, ""
	}
	if b[0] != '+' && b[0] != '-' {
		return 0, "unexpected text after seconds"
	}
	z := b[1:]
	var mm []byte
	switch {
	case len(z) == 5 && z[2] == ':':
		mm = z[3:]
	case len(z) == 4:
		mm = z[2:]
	case len(z) != 2:
		return 0, "bad UTC offset"
	}
	h, ok := fixed(z[:2])
	m := 0
	if ok && mm != nil {
		m, ok = fixed(mm)
	}
	if !ok || h > 23 || m > 59 {
		return 0, "bad UTC offset"
	}
	off := int64(h*3600 + m*60)
	if b[0] == '-' {
		off = -off
	}
	return off, ""
}

var pow10 = [...]int64{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9}

// fixed reads an all-digit field of known width.
func fixed(b []byte) (int, bool) {
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

func daysIn(year, month int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil counts days from 1970-01-01 to a proleptic Gregorian date
// (Howard Hinnant's algorithm: years start in March so the leap day is last).
// Valid for year >= 1.
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	yoe := y - era*400
	mp := (m + 9) % 12 // March = 0
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}
