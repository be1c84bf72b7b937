package trace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Roles of the Azure CSV columns, in the order the published trace uses.
const (
	colTime = iota
	colPrompt
	colOutput
	nCols
)

var azureColumns = [nCols]string{"TIMESTAMP", "ContextTokens", "GeneratedTokens"}

var azureHeader = strings.Join(azureColumns[:], ",")

type azureCSV struct {
	name    string
	lines   lines
	clock   clock
	role    [nCols]int // role[i] is what column i of the file holds
	records int
	err     error // sticky
}

// NewAzureCSV reads the Azure LLM inference trace CSV from r, checking the
// header now. Columns are found by header name, so their order may differ;
// unknown, duplicate or missing columns are errors. Timestamps are
// "YYYY-MM-DD HH:MM:SS" with 0 to 9 fractional digits, read as UTC. name
// prefixes error messages.
func NewAzureCSV(r io.Reader, name string, opt Options) (Reader, error) {
	scale, err := opt.rateScale(name)
	if err != nil {
		return nil, err
	}
	a := &azureCSV{name: name, lines: newLines(r), clock: clock{scale: scale}}
	if err := a.readHeader(); err != nil {
		return nil, err
	}
	return a, nil
}

func (a *azureCSV) fail(field string, err error) error {
	return &ParseError{Name: a.name, Line: a.lines.n, Field: field, Err: err}
}

func (a *azureCSV) readErr(err error) error {
	if err != errLong {
		err = fmt.Errorf("read: %w", err)
	}
	return a.fail("", err)
}

func (a *azureCSV) readHeader() error {
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
	names := strings.Split(string(line), ",")
	if len(names) > nCols {
		return a.fail("", fmt.Errorf("header has %d columns, want %s", len(names), azureHeader))
	}
	seen := [nCols]bool{}
	for i, n := range names {
		j := indexOf(azureColumns[:], n)
		if j < 0 {
			return a.fail("", fmt.Errorf("unknown column %s in header; want %s", show([]byte(n)), azureHeader))
		}
		if seen[j] {
			return a.fail(n, errors.New("duplicate column in header"))
		}
		seen[j] = true
		a.role[i] = j
	}
	for j, ok := range seen {
		if !ok {
			return a.fail(azureColumns[j], errors.New("missing from header"))
		}
	}
	return nil
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

func (a *azureCSV) Next() (Record, error) {
	if a.err != nil {
		return Record{}, a.err
	}
	rec, err := a.next()
	if err != nil {
		a.err = err
	}
	return rec, err
}

func (a *azureCSV) next() (Record, error) {
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

	var f [nCols][]byte
	col := 0
	for rest := line; ; col++ {
		if col == nCols {
			return Record{}, a.fail("", fmt.Errorf("%d columns, header has %d", bytes.Count(line, []byte(","))+1, nCols))
		}
		i := bytes.IndexByte(rest, ',')
		if i < 0 {
			f[a.role[col]] = rest
			col++
			break
		}
		f[a.role[col]], rest = rest[:i], rest[i+1:]
	}
	if col < nCols {
		return Record{}, a.fail(azureColumns[a.role[col]], fmt.Errorf("missing (%d of %d columns)", col, nCols))
	}

	abs, why := parseTimestamp(f[colTime])
	if why != "" {
		return Record{}, a.fail(azureColumns[colTime], fmt.Errorf("%s is not a timestamp YYYY-MM-DD HH:MM:SS[.fffffffff]: %s", show(f[colTime]), why))
	}
	prompt, why := parseCount(f[colPrompt])
	if why != "" {
		return Record{}, a.fail(azureColumns[colPrompt], fmt.Errorf("%s %s", show(f[colPrompt]), why))
	}
	if prompt == 0 {
		return Record{}, a.fail(azureColumns[colPrompt], errors.New("0 tokens; a prompt needs at least 1"))
	}
	output, why := parseCount(f[colOutput])
	if why != "" {
		return Record{}, a.fail(azureColumns[colOutput], fmt.Errorf("%s %s", show(f[colOutput]), why))
	}
	at, err := a.clock.arrival(abs, a.lines.n)
	if err != nil {
		return Record{}, a.fail(azureColumns[colTime], a.clock.explain(show(f[colTime]), err))
	}
	a.records++
	return Record{Line: a.lines.n, ArrivalNS: at, PromptTokens: prompt, OutputTokens: output}, nil
}

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
	if rest := b[19:]; len(rest) > 0 {
		if rest[0] != '.' {
			return 0, "unexpected text after seconds"
		}
		digits := rest[1:]
		if len(digits) == 0 || len(digits) > 9 {
			return 0, "want 1 to 9 fractional digits"
		}
		f, ok := fixed(digits)
		if !ok {
			return 0, "bad fractional seconds"
		}
		frac = int64(f) * pow10[9-len(digits)]
	}
	secs := daysFromCivil(year, month, day)*86400 + int64(hour*3600+min*60+sec)
	return secs*1e9 + frac, ""
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
