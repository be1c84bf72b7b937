package trace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
)

// checkStream drains a reader built from fuzz input and checks what any
// input must give: well-formed records, then io.EOF or an error that names
// the file and a line of it.
func checkStream(t *testing.T, name string, data []byte, r Reader, err error) {
	t.Helper()
	nLines := bytes.Count(data, []byte("\n")) + 1
	if err != nil {
		checkErr(t, name, nLines, err)
		return
	}
	var prev Record
	rejected := false
	for n := 0; ; n++ {
		rec, err := r.Next()
		if err == io.EOF {
			// A stream may end with every record rejected (the run then
			// serves none and reports each); with none at all it is an error.
			if n == 0 && !rejected {
				t.Fatal("io.EOF before any record; want an error")
			}
			return
		}
		var rej *RejectError
		if errors.As(err, &rej) {
			// One record refused; the stream goes on.
			checkErr(t, name, nLines, err)
			if rej.Reason != RejectEmptyPrompt && rej.Reason != RejectOutOfOrder || rej.Line <= prev.Line {
				t.Fatalf("rejection %+v after line %d", rej, prev.Line)
			}
			prev.Line, rejected = rej.Line, true
			n--
			continue
		}
		if err != nil {
			checkErr(t, name, nLines, err)
			if _, again := r.Next(); again != err {
				t.Fatalf("after %v, Next returned %v", err, again)
			}
			return
		}
		if n > nLines {
			t.Fatalf("%d records from %d lines", n, nLines)
		}
		switch {
		case rec.Line < 1 || rec.Line > nLines || rec.Line <= prev.Line:
			t.Fatalf("record %+v after line %d of %d", rec, prev.Line, nLines)
		case n == 0 && !rejected && rec.ArrivalNS != 0, rec.ArrivalNS < prev.ArrivalNS:
			t.Fatalf("record %+v after %+v", rec, prev)
		case rec.PromptTokens < 1 || rec.OutputTokens < 0:
			t.Fatalf("record %+v has bad lengths", rec)
		}
		prev = rec
	}
}

func checkErr(t *testing.T, name string, nLines int, err error) {
	t.Helper()
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v is not a *ParseError", err)
	}
	if pe.Name != name || pe.Line < 1 || pe.Line > nLines+1 || !strings.HasPrefix(err.Error(), fmt.Sprintf("%s:%d: ", name, pe.Line)) {
		t.Fatalf("error %q does not name %s and a line of %d", err, name, nLines)
	}
}

func fuzzScale(b uint8) float64 { return float64(b) / 16 } // 0 is the default

func FuzzAzureCSV(f *testing.F) {
	sample, err := os.ReadFile(sampleTrace)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(sample, uint8(0))
	f.Add(sample[:len(sample)/3], uint8(32))
	f.Add([]byte(header+"2023-11-30 23:59:59.9,1,1\n\n2024-02-29 00:00:00.1,1,0"), uint8(8))
	f.Add([]byte("GeneratedTokens,TIMESTAMP,ContextTokens\r\n44,2023-11-16T18:15:46.6805900,374\r\n"), uint8(1))
	f.Add([]byte(header+"2023-11-16 18:15:46,1,1\n2023-11-16 18:15:45,1,1\n"), uint8(0))
	f.Add([]byte(""), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, scale uint8) {
		r, err := NewAzureCSV(bytes.NewReader(data), "fuzz.csv", Options{RateScale: fuzzScale(scale)})
		checkStream(t, "fuzz.csv", data, r, err)
	})
}

// sampleJSONL is the checked-in Azure sample as JSON Lines with RFC3339
// timestamps.
func sampleJSONL(f *testing.F) []byte {
	sample, err := os.ReadFile(sampleTrace)
	if err != nil {
		f.Fatal(err)
	}
	var b bytes.Buffer
	for _, line := range strings.Split(strings.TrimSpace(string(sample)), "\r\n")[1:] {
		var day, clock string
		var p, o int
		fmt.Sscanf(strings.ReplaceAll(line, ",", " "), "%s %s %d %d", &day, &clock, &p, &o)
		fmt.Fprintf(&b, `{"timestamp":"%sT%sZ","input_tokens":%d,"output_tokens":%d}`+"\n", day, clock, p, o)
	}
	return b.Bytes()
}

func FuzzJSONL(f *testing.F) {
	f.Add(sampleJSONL(f), uint8(0), uint8(0))
	f.Add([]byte(`{"timestamp": 1700000000.123456789, "input_tokens": 10, "output_tokens": 0}`+"\n\n"+
		`{"timestamp": 1.7000000015e9, "input_tokens": 3, "output_tokens": 4, "x": [1, {"y": null}]}`), uint8(16), uint8(0))
	f.Add([]byte(`{"timestamp":-20.9,"input_tokens":1,"output_tokens":1}`+"\n"+`{"timestamp":7e-3,"input_tokens":1,"output_tokens":1}`), uint8(3), uint8(3))
	f.Add([]byte(`{"timestamp":"2023-11-16T19:15:46.68059+01:00","input_tokens":1,"output_tokens":1}`), uint8(0), uint8(1))
	f.Add([]byte(`[1,2]`), uint8(0), uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, scale, unit uint8) {
		opt := Options{RateScale: fuzzScale(scale), TimeUnit: []string{"s", "ms", "us", "ns"}[unit%4]}
		r, err := NewJSONL(bytes.NewReader(data), "fuzz.jsonl", opt)
		checkStream(t, "fuzz.jsonl", data, r, err)
	})
}
