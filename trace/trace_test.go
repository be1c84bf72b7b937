package trace

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// The Azure LLM inference trace (CC-BY 4.0, Patel et al., Splitwise,
// ISCA 2024): the full hour where the shared checkout has it, and the first
// 200 lines checked in so every checkout tests real data.
var (
	// The full hour, copied into the repository (with its attribution) so
	// CI tests real data; the sample seeds the fuzzers.
	sharedTrace = filepath.Join("..", "scenarios", "traces", "AzureLLMInferenceTrace_conv.csv")
	sampleTrace = filepath.Join("..", "testdata", "trace", "azure_conv_sample.csv")
)

const header = "TIMESTAMP,ContextTokens,GeneratedTokens\n"

func readAll(r Reader) ([]Record, error) {
	var recs []Record
	for {
		rec, err := r.Next()
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return recs, err
		}
		recs = append(recs, rec)
	}
}

// referenceAzure parses an Azure CSV the slow, obviously right way.
func referenceAzure(t *testing.T, path string) []Record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var recs []Record
	var first time.Time
	for i, row := range rows[1:] {
		ts, err := time.Parse("2006-01-02 15:04:05.999999999", row[0])
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = ts
		}
		var p, o int
		fmt.Sscan(row[1], &p)
		fmt.Sscan(row[2], &o)
		recs = append(recs, Record{Line: i + 2, ArrivalNS: ts.Sub(first).Nanoseconds(), PromptTokens: p, OutputTokens: o})
	}
	return recs
}

func TestAzureRealTrace(t *testing.T) {
	for _, tc := range []struct {
		path    string
		records int
	}{
		{sampleTrace, 199},
		{sharedTrace, 19366},
	} {
		t.Run(filepath.Base(tc.path), func(t *testing.T) {
			r, c, err := Open(tc.path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			got, err := readAll(r)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tc.records {
				t.Fatalf("%d records, want %d", len(got), tc.records)
			}
			// 2023-11-16 18:15:46.6805900,374,44 then 18:15:50.9951690,396,109.
			want := []Record{{2, 0, 374, 44}, {3, 4_314_579_000, 396, 109}}
			for i, w := range want {
				if got[i] != w {
					t.Errorf("record %d = %+v, want %+v", i, got[i], w)
				}
			}
			for i := 1; i < len(got); i++ {
				if got[i].ArrivalNS < got[i-1].ArrivalNS {
					t.Fatalf("line %d arrives before line %d", got[i].Line, got[i-1].Line)
				}
			}
			ref := referenceAzure(t, tc.path)
			for i := range ref {
				if got[i] != ref[i] {
					t.Fatalf("record %d = %+v, time.Parse says %+v", i, got[i], ref[i])
				}
			}
		})
	}
}

func TestAzureFullHour(t *testing.T) {
	r, c, err := Open(sharedTrace, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, err := readAll(r)
	if err != nil {
		t.Fatal(err)
	}
	// 2023-11-16 19:14:08.4025270,197,183, 58m21.721937s after the first.
	last := Record{19367, 3_501_721_937_000, 197, 183}
	if got[len(got)-1] != last {
		t.Errorf("last record %+v, want %+v", got[len(got)-1], last)
	}
}

func TestAzureCSV(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []Record
	}{
		{"columns in any order",
			"GeneratedTokens,TIMESTAMP,ContextTokens\n44,2023-11-16 18:15:46.6805900,374\n0,2023-11-16 18:15:47,5\n",
			[]Record{{2, 0, 374, 44}, {3, 319_410_000, 5, 0}}},
		{"month boundary",
			header + "2023-11-30 23:59:59.9,1,1\n2023-12-01 00:00:00.1,1,1\n",
			[]Record{{2, 0, 1, 1}, {3, 200_000_000, 1, 1}}},
		{"year boundary and leap day",
			header + "2023-12-31 23:59:59,1,1\n2024-02-29 00:00:00,1,1\n2024-03-01 00:00:00,1,1\n",
			[]Record{{2, 0, 1, 1}, {3, 5_097_601e9, 1, 1}, {4, 5_184_001e9, 1, 1}}},
		{"0 to 9 fractional digits",
			header + "2023-11-16 18:15:46,1,1\n2023-11-16 18:15:46.1,1,1\n2023-11-16 18:15:46.123456789,1,1\n",
			[]Record{{2, 0, 1, 1}, {3, 100_000_000, 1, 1}, {4, 123_456_789, 1, 1}}},
		{"CRLF, BOM, T separator, blank lines, equal times, no final newline",
			"\xef\xbb\xbf" + strings.ReplaceAll(header, "\n", "\r\n") + "2023-11-16T18:15:46,1,1\r\n\r\n\n2023-11-16 18:15:46,2,2",
			[]Record{{2, 0, 1, 1}, {5, 0, 2, 2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewAzureCSV(strings.NewReader(tc.in), "conv.csv", Options{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := readAll(r)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got  %v\nwant %v", got, tc.want)
			}
		})
	}
}

// wantErr reads r to the end and checks it stops with exactly want, then
// keeps returning it.
func wantErr(t *testing.T, r Reader, err error, want string) {
	t.Helper()
	if err == nil {
		_, err = readAll(r)
	}
	if err == nil || err.Error() != want {
		t.Fatalf("error %v\nwant  %s", err, want)
	}
	if r != nil {
		if _, again := r.Next(); again != err {
			t.Errorf("next call after error returned %v", again)
		}
	}
}

func TestAzureCSVErrors(t *testing.T) {
	const row = "2023-11-16 18:15:46.6805900,374,44\n"
	long := strings.Repeat("1", maxLine+1)
	for _, tc := range []struct{ in, want string }{
		{"", `conv.csv:1: empty file; want header TIMESTAMP,ContextTokens,GeneratedTokens`},
		{row, `conv.csv:1: missing header: want TIMESTAMP,ContextTokens,GeneratedTokens, got "2023-11-16 18:15:46.6805900,374,44"`},
		{"TIMESTAMP,ContextTokens\n" + row, `conv.csv:1: field GeneratedTokens: missing from header "TIMESTAMP,ContextTokens" (name the output column with output_field)`},
		{"TIMESTAMP,ContextTokens,GeneratedTokens,Extra\n", `conv.csv:2: no records after the header`},
		{"TIMESTAMP,Context,GeneratedTokens\n", `conv.csv:1: field ContextTokens: missing from header "TIMESTAMP,Context,GeneratedTokens" (name the prompt column with prompt_field)`},
		{"TIMESTAMP,TIMESTAMP,GeneratedTokens\n", `conv.csv:1: field TIMESTAMP: duplicate column in header`},
		{header, `conv.csv:2: no records after the header`},
		{header + "\n\r\n", `conv.csv:4: no records after the header`},
		{header + row + "2023-11-16 18:15:47,12a,5\n", `conv.csv:3: field ContextTokens: "12a" is not a non-negative integer`},
		{header + "2023-11-16 18:15:47,,5\n", `conv.csv:2: field ContextTokens: "" is not a non-negative integer`},
		{header + "2023-11-16 18:15:47, 12,5\n", `conv.csv:2: field ContextTokens: " 12" is not a non-negative integer`},
		{header + "2023-11-16 18:15:47,2147483648,5\n", `conv.csv:2: field ContextTokens: "2147483648" is out of range (max 2147483647)`},
		{header + "2023-11-16 18:15:47,1,-1\n", `conv.csv:2: field GeneratedTokens: "-1" is not a non-negative integer`},
		{header + "2023-11-16 18:15:47,1,1.5\n", `conv.csv:2: field GeneratedTokens: "1.5" is not a non-negative integer`},
		{header + "2023-11-16 18:15:47,374\n", `conv.csv:2: field GeneratedTokens: missing (2 of 3 columns)`},
		{header + "2023-11-16 18:15:47\n", `conv.csv:2: field ContextTokens: missing (1 of 3 columns)`},
		{header + "2023-11-16 18:15:47,1,1,9\n", `conv.csv:2: 4 columns, header has 3`},
		{header + "2023-13-01 00:00:00,1,1\n", `conv.csv:2: field TIMESTAMP: "2023-13-01 00:00:00" is not a timestamp YYYY-MM-DD HH:MM:SS[.fffffffff][Z|±HH:MM]: month out of range`},
		{header + "2023-02-29 00:00:00,1,1\n", `conv.csv:2: field TIMESTAMP: "2023-02-29 00:00:00" is not a timestamp YYYY-MM-DD HH:MM:SS[.fffffffff][Z|±HH:MM]: day out of range`},
		{header + "2023-11-31 00:00:00,1,1\n", `conv.csv:2: field TIMESTAMP: "2023-11-31 00:00:00" is not a timestamp YYYY-MM-DD HH:MM:SS[.fffffffff][Z|±HH:MM]: day out of range`},
		{header + "2023-11-16 24:00:00,1,1\n", `conv.csv:2: field TIMESTAMP: "2023-11-16 24:00:00" is not a timestamp YYYY-MM-DD HH:MM:SS[.fffffffff][Z|±HH:MM]: time of day out of range`},
		{header + "2023-11-16 18:15:46.1234567890,1,1\n", `conv.csv:2: field TIMESTAMP: "2023-11-16 18:15:46.1234567890" is not a timestamp YYYY-MM-DD HH:MM:SS[.fffffffff][Z|±HH:MM]: want 1 to 9 fractional digits`},
		{header + "2023-11-16 18:15:46.,1,1\n", `conv.csv:2: field TIMESTAMP: "2023-11-16 18:15:46." is not a timestamp YYYY-MM-DD HH:MM:SS[.fffffffff][Z|±HH:MM]: want 1 to 9 fractional digits`},
		{header + "2023-11-16 18:15:46.12a,1,1\n", `conv.csv:2: field TIMESTAMP: "2023-11-16 18:15:46.12a" is not a timestamp YYYY-MM-DD HH:MM:SS[.fffffffff][Z|±HH:MM]: bad fractional seconds`},
		{header + "2023-11-16 18:15:46Q,1,1\n", `conv.csv:2: field TIMESTAMP: "2023-11-16 18:15:46Q" is not a timestamp YYYY-MM-DD HH:MM:SS[.fffffffff][Z|±HH:MM]: unexpected text after seconds`},
		{header + "2023/11/16 18:15:46,1,1\n", `conv.csv:2: field TIMESTAMP: "2023/11/16 18:15:46" is not a number or a timestamp YYYY-MM-DD HH:MM:SS[.fffffffff][Z|±HH:MM]: bad layout`},
		{header + "2023-11-16 18:15:4x,1,1\n", `conv.csv:2: field TIMESTAMP: "2023-11-16 18:15:4x" is not a timestamp YYYY-MM-DD HH:MM:SS[.fffffffff][Z|±HH:MM]: bad layout`},
		{header + "1600-01-01 00:00:00,1,1\n", `conv.csv:2: field TIMESTAMP: "1600-01-01 00:00:00" is not a timestamp YYYY-MM-DD HH:MM:SS[.fffffffff][Z|±HH:MM]: year outside 1678-2261`},
		{header + "1678-01-01 00:00:00,1,1\n2261-12-31 00:00:00,1,1\n", `conv.csv:3: field TIMESTAMP: "2261-12-31 00:00:00" is too far after the first record for int64 ns`},
		{header + row + long + "\n", `conv.csv:3: line longer than 1 MiB`},
	} {
		r, err := NewAzureCSV(strings.NewReader(tc.in), "conv.csv", Options{})
		wantErr(t, r, err, tc.want)
	}
}

func TestAzureReadError(t *testing.T) {
	in := io.MultiReader(strings.NewReader(header+"2023-11-16 18:15:46,1,1\n"), iotest.ErrReader(errors.New("disk on fire")))
	r, err := NewAzureCSV(in, "conv.csv", Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = readAll(r)
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Line != 3 || err.Error() != "conv.csv:3: read: disk on fire" {
		t.Fatalf("error %v", err)
	}
}

func TestParseErrorFields(t *testing.T) {
	r, _ := NewAzureCSV(strings.NewReader(header+"2023-11-16 18:15:46,1,x\n"), "conv.csv", Options{})
	_, err := readAll(r)
	var pe *ParseError
	if !errors.As(err, &pe) || *pe != (ParseError{"conv.csv", 2, "GeneratedTokens", pe.Err}) {
		t.Fatalf("error %#v", err)
	}
}

// TestTimestampMatchesTimeParse checks the hand-written parser against the
// standard library on random instants across its whole year range.
func TestTimestampMatchesTimeParse(t *testing.T) {
	lo := time.Date(1678, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	hi := time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100_000 {
		ts := time.Unix(lo+rng.Int64N(hi-lo), rng.Int64N(1e9)).UTC()
		s := ts.Format("2006-01-02 15:04:05.000000000")
		s = s[:len(s)-rng.IntN(11)] // 9 to 0 digits, or no dot
		s = strings.TrimSuffix(s, ".")
		want, err := time.Parse("2006-01-02 15:04:05.999999999", s)
		if err != nil {
			t.Fatal(err)
		}
		got, why := parseTimestamp([]byte(s))
		if why != "" || got != want.UnixNano() {
			t.Fatalf("%s: got %d (%s), want %d", s, got, why, want.UnixNano())
		}
	}
}

func TestRateScale(t *testing.T) {
	data, err := os.ReadFile(sampleTrace)
	if err != nil {
		t.Fatal(err)
	}
	read := func(scale float64) []Record {
		r, err := NewAzureCSV(bytes.NewReader(data), "sample.csv", Options{RateScale: scale})
		if err != nil {
			t.Fatal(err)
		}
		recs, err := readAll(r)
		if err != nil {
			t.Fatal(err)
		}
		return recs
	}
	base, double, half, def := read(1), read(2), read(0.5), read(0)
	for i, b := range base {
		if def[i] != b {
			t.Fatalf("RateScale 0 changed %+v to %+v", b, def[i])
		}
		if d := double[i].ArrivalNS; d != (b.ArrivalNS+1)/2 { // offsets are multiples of 100 ns: exact halves
			t.Fatalf("RateScale 2: line %d at %d, want %d", b.Line, d, b.ArrivalNS/2)
		}
		if h := half[i].ArrivalNS; h != 2*b.ArrivalNS {
			t.Fatalf("RateScale 0.5: line %d at %d, want %d", b.Line, h, 2*b.ArrivalNS)
		}
		if double[i].PromptTokens != b.PromptTokens || double[i].OutputTokens != b.OutputTokens {
			t.Fatalf("RateScale changed lengths at line %d", b.Line)
		}
	}
	for _, bad := range []float64{-1, inf(), -inf(), nan()} {
		_, err := NewAzureCSV(bytes.NewReader(data), "sample.csv", Options{RateScale: bad})
		want := fmt.Sprintf("trace sample.csv: RateScale %v must be a finite number > 0", bad)
		if err == nil || err.Error() != want {
			t.Errorf("RateScale %v: error %v", bad, err)
		}
		_, err = NewJSONL(bytes.NewReader(data), "sample.csv", Options{RateScale: bad})
		if err == nil || err.Error() != want {
			t.Errorf("JSONL RateScale %v: error %v", bad, err)
		}
	}
}

func inf() float64 { return 1 / zero }
func nan() float64 { return zero / zero }

var zero float64

func TestJSONL(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		opt      Options
		want     []Record
	}{
		{"defaults: seconds, exact to the nanosecond",
			`{"timestamp": 1700000000.123456789, "input_tokens": 10, "output_tokens": 0}` + "\n" +
				`{"timestamp": 1700000001, "input_tokens": 3 , "output_tokens": 4, "prompt": "hi"}`,
			Options{}, []Record{{1, 0, 10, 0}, {2, 876_543_211, 3, 4}}},
		{"custom fields in ms, nested values ignored, blank lines skipped",
			`{"t":1500,"p":3,"o":4,"extra":{"nested":[1,{"p":9}]}}` + "\n\n  \r\n" + `{"o":1,"p":2,"t":2500.5}`,
			Options{TimeField: "t", PromptField: "p", OutputField: "o", TimeUnit: "ms"},
			[]Record{{1, 0, 3, 4}, {4, 1_000_500_000, 2, 1}}},
		{"microseconds with exponent",
			`{"timestamp":1e6,"input_tokens":1,"output_tokens":1}` + "\n" + `{"timestamp":1.5E6,"input_tokens":1,"output_tokens":1}`,
			Options{TimeUnit: "us"}, []Record{{1, 0, 1, 1}, {2, 500_000_000, 1, 1}}},
		{"nanoseconds, negative, sub-ns dropped",
			`{"timestamp":-20.9,"input_tokens":1,"output_tokens":1}` + "\n" + `{"timestamp":7,"input_tokens":1,"output_tokens":1}`,
			Options{TimeUnit: "ns"}, []Record{{1, 0, 1, 1}, {2, 27, 1, 1}}},
		{"RFC3339 with zones, rate scaled",
			`{"timestamp":"2023-11-16T18:15:46.6805900Z","input_tokens":374,"output_tokens":44}` + "\n" +
				`{"timestamp":"2023-11-16T19:15:46.68059+01:00","input_tokens":1,"output_tokens":1}` + "\n" +
				`{"timestamp":"2023-11-16T18:15:50.995169Z","input_tokens":396,"output_tokens":109}`,
			Options{RateScale: 2}, []Record{{1, 0, 374, 44}, {2, 0, 1, 1}, {3, 2_157_289_500, 396, 109}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewJSONL(strings.NewReader(tc.in), "t.jsonl", tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			got, err := readAll(r)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got  %v\nwant %v", got, tc.want)
			}
		})
	}
}

func TestJSONLErrors(t *testing.T) {
	const ok = `{"timestamp":1,"input_tokens":1,"output_tokens":1}` + "\n"
	for _, tc := range []struct {
		in   string
		opt  Options
		want string
	}{
		{"", Options{}, `t.jsonl:1: no records`},
		{"\n \n", Options{}, `t.jsonl:3: no records`},
		{`{"timestamp":1,"output_tokens":1}`, Options{}, `t.jsonl:1: field input_tokens: missing`},
		{`{"input_tokens":1,"output_tokens":1}`, Options{TimeField: "t"}, `t.jsonl:1: field t: missing`},
		{ok + `{"timestamp":2,"input_tokens":12.5,"output_tokens":1}`, Options{}, `t.jsonl:2: field input_tokens: 12.5 is not a non-negative integer`},
		{`{"timestamp":2,"input_tokens":"12","output_tokens":1}`, Options{}, `t.jsonl:1: field input_tokens: "12" is not a non-negative integer`},
		{`{"timestamp":2,"input_tokens":1,"output_tokens":-3}`, Options{}, `t.jsonl:1: field output_tokens: -3 is not a non-negative integer`},
		{`{"timestamp":2,"input_tokens":1e3,"output_tokens":3}`, Options{}, `t.jsonl:1: field input_tokens: 1e3 is not a non-negative integer`},
		{`{"timestamp":true,"input_tokens":1,"output_tokens":1}`, Options{}, `t.jsonl:1: field timestamp: true is not a number or an RFC3339 string`},
		{`{"timestamp":"yesterday","input_tokens":1,"output_tokens":1}`, Options{}, `t.jsonl:1: field timestamp: "yesterday" is not an RFC3339 time`},
		{`{"timestamp":1e300,"input_tokens":1,"output_tokens":1}`, Options{}, `t.jsonl:1: field timestamp: 1e300 is out of range`},
		{`{"timestamp":"1500-01-01T00:00:00Z","input_tokens":1,"output_tokens":1}`, Options{}, `t.jsonl:1: field timestamp: "1500-01-01T00:00:00Z": year outside 1678-2261`},
		{ok + `{"timestamp":"2023-11-16T18:15:46Z","input_tokens":1,"output_tokens":1}`, Options{}, `t.jsonl:2: field timestamp: "2023-11-16T18:15:46Z" mixes RFC3339 strings and numbers in one trace`},
		{ok + `{"timestamp":2,"input_tokens":1,`, Options{}, `t.jsonl:2: invalid JSON: unexpected end of JSON input`},
		{ok + `{"timestamp":2} x`, Options{}, `t.jsonl:2: invalid JSON: invalid character 'x' after top-level value`},
		{`[1,2]`, Options{}, `t.jsonl:1: not a JSON object: "[1,2]"`},
		{`null`, Options{}, `t.jsonl:1: not a JSON object: "null"`},
		{ok + strings.Repeat(" ", maxLine+1), Options{}, `t.jsonl:2: line longer than 1 MiB`},
	} {
		r, err := NewJSONL(strings.NewReader(tc.in), "t.jsonl", tc.opt)
		wantErr(t, r, err, tc.want)
	}
	_, err := NewJSONL(strings.NewReader(""), "t.jsonl", Options{TimeUnit: "h"})
	if err == nil || err.Error() != `trace t.jsonl: TimeUnit "h"; want s, ms, us or ns` {
		t.Errorf("TimeUnit h: error %v", err)
	}
}

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	jsonl := `{"timestamp":5,"input_tokens":7,"output_tokens":8}` + "\n"
	for _, p := range []string{
		write("a.csv", header+"2023-11-16 18:15:46,7,8\n"),
		write("b.JSONL", jsonl),
		write("c.ndjson", jsonl),
	} {
		r, c, err := Open(p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		recs, err := readAll(r)
		c.Close()
		if err != nil || len(recs) != 1 || recs[0].PromptTokens != 7 || recs[0].OutputTokens != 8 {
			t.Errorf("%s: %v, %v", p, recs, err)
		}
	}
	p := write("d.txt", jsonl)
	if _, _, err := Open(p, Options{}); err == nil || err.Error() != fmt.Sprintf(`trace %s: unknown extension ".txt"; want .csv, .jsonl or .ndjson, optionally .gz`, p) {
		t.Errorf("d.txt: error %v", err)
	}
	if _, _, err := Open(filepath.Join(dir, "missing.csv"), Options{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: error %v", err)
	}
	p = write("e.csv", "")
	if _, _, err := Open(p, Options{}); err == nil || err.Error() != p+":1: empty file; want header TIMESTAMP,ContextTokens,GeneratedTokens" {
		t.Errorf("e.csv: error %v", err)
	}
}

// azureCSVOf writes a synthetic trace as Azure CSV with 7 fractional digits.
func azureCSVOf(r Reader) []byte {
	base := time.Date(2023, 11, 16, 18, 15, 46, 0, time.UTC)
	var b bytes.Buffer
	b.WriteString(header)
	for {
		rec, err := r.Next()
		if err != nil {
			return b.Bytes()
		}
		fmt.Fprintf(&b, "%s,%d,%d\r\n", base.Add(time.Duration(rec.ArrivalNS)).Format("2006-01-02 15:04:05.0000000"), rec.PromptTokens, rec.OutputTokens)
	}
}

func TestAzureCSVZeroAllocsPerRecord(t *testing.T) {
	data := azureCSVOf(Synthetic(5000, 1, 3e8, 1000, 130))
	r, err := NewAzureCSV(bytes.NewReader(data), "synth.csv", Options{RateScale: 1.5})
	if err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(2000, func() {
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per record, want 0", allocs)
	}
	// A whole file costs a constant: the reader, its buffer and the header
	// (a string per column name, and the per-column field slice).
	sample, _ := os.ReadFile(sampleTrace)
	perFile := testing.AllocsPerRun(20, func() {
		r, _ := NewAzureCSV(bytes.NewReader(sample), "sample.csv", Options{})
		for {
			if _, err := r.Next(); err != nil {
				return
			}
		}
	})
	if perFile > 16 {
		t.Errorf("%v allocations per file, want at most 16", perFile)
	}
}

func TestSyntheticRoundTripsThroughCSV(t *testing.T) {
	data := azureCSVOf(Synthetic(2000, 7, 5e7, 500, 100))
	r, _ := NewAzureCSV(bytes.NewReader(data), "synth.csv", Options{})
	got, err := readAll(r)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := readAll(Synthetic(2000, 7, 5e7, 500, 100))
	for i := range want {
		w := want[i]
		w.Line++                         // after the header
		w.ArrivalNS -= w.ArrivalNS % 100 // 7 fractional digits
		if got[i] != w {
			t.Fatalf("record %d = %+v, want %+v", i, got[i], w)
		}
	}
}

func TestSynthetic(t *testing.T) {
	const n = 20001
	a, _ := readAll(Synthetic(n, 42, 1e8, 1000, 128))
	b, _ := readAll(Synthetic(n, 42, 1e8, 1000, 128))
	c, _ := readAll(Synthetic(n, 43, 1e8, 1000, 128))
	if len(a) != n || fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("seed 42 gave %d records, or differed between runs", len(a))
	}
	if fmt.Sprint(a) == fmt.Sprint(c) {
		t.Fatal("seeds 42 and 43 gave the same trace")
	}
	if a[0].ArrivalNS != 0 || a[0].Line != 1 || a[n-1].Line != n {
		t.Fatalf("first %+v last %+v", a[0], a[n-1])
	}
	prompts, outputs := make([]int, n), make([]int, n)
	for i, r := range a {
		if i > 0 && r.ArrivalNS < a[i-1].ArrivalNS {
			t.Fatalf("record %d goes back in time", i)
		}
		if r.PromptTokens < 1 || r.PromptTokens > 32768 || r.OutputTokens < 1 || r.OutputTokens > 32768 {
			t.Fatalf("record %d lengths out of [1, 32768]: %+v", i, r)
		}
		prompts[i], outputs[i] = r.PromptTokens, r.OutputTokens
	}
	if gap := float64(a[n-1].ArrivalNS) / (n - 1); gap < 0.97e8 || gap > 1.03e8 {
		t.Errorf("mean gap %.0f ns, want about 1e8", gap)
	}
	if m := median(prompts); m < 950 || m > 1050 {
		t.Errorf("median prompt %d, want about 1000", m)
	}
	if m := median(outputs); m < 120 || m > 136 {
		t.Errorf("median output %d, want about 128", m)
	}
	r := Synthetic(3, 1, -5, 0, -1)
	got, _ := readAll(r)
	for _, rec := range got {
		if rec.ArrivalNS != 0 || rec.PromptTokens < 1 || rec.OutputTokens < 1 {
			t.Errorf("degenerate arguments gave %+v", rec)
		}
	}
	if _, err := r.Next(); err != io.EOF {
		t.Errorf("after the end: %v", err)
	}
	s := Synthetic(1<<20, 1, 1e6, 1000, 100)
	if allocs := testing.AllocsPerRun(1000, func() { s.Next() }); allocs != 0 {
		t.Errorf("%v allocations per synthetic record", allocs)
	}
}

func median(v []int) int {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
