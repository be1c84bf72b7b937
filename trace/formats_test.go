package trace

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

// drain reads every record, collecting rejections apart.
func drainRejects(t *testing.T, r Reader) (recs []Record, rejects []*RejectError) {
	t.Helper()
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return
		}
		var rej *RejectError
		if errors.As(err, &rej) {
			rejects = append(rejects, rej)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
}

// The samples under testdata/ are written in the public traces' layouts;
// each is read with no options but its format's.
func TestPublicFormats(t *testing.T) {
	for _, c := range []struct {
		file    string
		opt     Options
		want    []Record
		rejects []string // "reason@line"
	}{
		{"azure2024_sample.csv", Options{}, []Record{
			{2, 0, 2162, 6}, {3, 425_200_000, 871, 14}, {4, 996_900_000, 4095, 2}, {5, 996_900_000, 133, 391}, {7, 3_119_000_000, 17, 1},
		}, []string{"empty_prompt@6"}},
		{"azure2024_sample.csv.gz", Options{}, nil, []string{"empty_prompt@6"}},
		{"burstgpt_sample.csv", Options{}, []Record{
			{2, 0, 472, 18}, {3, 0, 1020, 233}, {4, 2e9, 61, 0}, {5, 7.5e9, 2896, 402}, {7, 25e9, 95, 87},
		}, []string{"out_of_order@6"}},
		{"mooncake_sample.jsonl", Options{Format: "mooncake"}, []Record{
			{1, 0, 6955, 52}, {2, 1.2e9, 17300, 26}, {3, 3.511e9, 7110, 365}, {4, 3.511e9, 512, 12}, {5, 9.004e9, 1024, 1},
		}, nil},
		{"openai_usage_sample.jsonl", Options{TimeField: "created", PromptField: "usage.prompt_tokens", OutputField: "usage.completion_tokens"}, []Record{
			{1, 0, 120, 33}, {2, 1.25e9, 80, 100}, {4, 3.75e9, 42, 7},
		}, []string{"out_of_order@3"}},
	} {
		t.Run(c.file, func(t *testing.T) {
			r, closer, err := Open(filepath.Join("testdata", c.file), c.opt)
			if err != nil {
				t.Fatal(err)
			}
			defer closer.Close()
			recs, rejects := drainRejects(t, r)
			if c.want != nil && !equalRecords(recs, c.want) {
				t.Errorf("records\n got  %v\n want %v", recs, c.want)
			}
			var got []string
			for _, x := range rejects {
				got = append(got, x.Reason+"@"+itoa(x.Line))
				if !strings.HasPrefix(x.Error(), filepath.Join("testdata", c.file)+":"+itoa(x.Line)+": field ") {
					t.Errorf("rejection %q does not name the file, line and field", x)
				}
			}
			if strings.Join(got, " ") != strings.Join(c.rejects, " ") {
				t.Errorf("rejections %v, want %v", got, c.rejects)
			}
		})
	}
}

func equalRecords(a, b []Record) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func itoa(n int) string {
	var b []byte
	for {
		b = append([]byte{byte('0' + n%10)}, b...)
		if n /= 10; n == 0 {
			return string(b)
		}
	}
}

// Every format reads the same gzipped, from the OS or from an fs.FS.
func TestGzipEveryFormat(t *testing.T) {
	dir := t.TempDir()
	fsys := fstest.MapFS{}
	for _, name := range []string{"burstgpt_sample.csv", "mooncake_sample.jsonl"} {
		plain, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		var z bytes.Buffer
		w := gzip.NewWriter(&z)
		w.Write(plain)
		w.Close()
		gz := filepath.Join(dir, name+".gz")
		if err := os.WriteFile(gz, z.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		fsys[name+".gz"] = &fstest.MapFile{Data: z.Bytes()}
		opt := Options{}
		if strings.HasSuffix(name, ".jsonl") {
			opt.Format = "mooncake"
		}
		read := func(open func() (Reader, io.Closer, error)) []Record {
			r, c, err := open()
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			recs, _ := drainRejects(t, r)
			return recs
		}
		want := read(func() (Reader, io.Closer, error) { return Open(filepath.Join("testdata", name), opt) })
		if got := read(func() (Reader, io.Closer, error) { return Open(gz, opt) }); !equalRecords(got, want) || len(want) == 0 {
			t.Errorf("%s.gz: %v, want %v", name, got, want)
		}
		if got := read(func() (Reader, io.Closer, error) { return OpenFS(fsys, name+".gz", opt) }); !equalRecords(got, want) {
			t.Errorf("%s.gz from an fs.FS: %v, want %v", name, got, want)
		}
	}
	bad := filepath.Join(dir, "bad.csv.gz")
	os.WriteFile(bad, []byte("TIMESTAMP,ContextTokens,GeneratedTokens\n"), 0o644)
	if _, _, err := Open(bad, Options{}); err == nil || !strings.HasPrefix(err.Error(), bad+":1: not gzip") {
		t.Errorf("plain text named .gz: %v", err)
	}
}

func TestTimestampOffsets(t *testing.T) {
	base, _ := parseTimestamp([]byte("2024-05-12 00:00:00"))
	for in, want := range map[string]int64{
		"2024-05-12 00:00:00+00:00":        base,
		"2024-05-12 00:00:00Z":             base,
		"2024-05-12 02:00:00+02:00":        base,
		"2024-05-11 19:30:00-0430":         base,
		"2024-05-12 01:00:00.000001+01":    base + 1000,
		"2024-05-12T00:00:00.5+00:00":      base + 5e8,
		"2024-05-12 00:00:00.006000+00:00": base + 6e6,
	} {
		got, why := parseTimestamp([]byte(in))
		if why != "" || got != want {
			t.Errorf("%s: %d %q, want %d", in, got, why, want)
		}
	}
	for _, in := range []string{"2024-05-12 00:00:00+24:00", "2024-05-12 00:00:00+0", "2024-05-12 00:00:00+00:60", "2024-05-12 00:00:00.+00:00", "2024-05-12 00:00:00 UTC"} {
		if _, why := parseTimestamp([]byte(in)); why == "" {
			t.Errorf("%s: accepted", in)
		}
	}
}

// A column mapping names the columns; others are ignored; counts written
// as floats with a zero fraction are counts.
func TestCSVColumnMapping(t *testing.T) {
	in := "id,arrived_ms,in,out,note\n7,1000,12,3.0,x\n8,1500.5,100.0,4,y\n9,1499,5,5,z\n"
	r, err := NewCSV(strings.NewReader(in), "m.csv", Options{TimeField: "arrived_ms", PromptField: "in", OutputField: "out", TimeUnit: "ms"})
	if err != nil {
		t.Fatal(err)
	}
	recs, rejects := drainRejects(t, r)
	if want := []Record{{2, 0, 12, 3}, {3, 500_500_000, 100, 4}}; !equalRecords(recs, want) {
		t.Errorf("records %v, want %v", recs, want)
	}
	if len(rejects) != 1 || rejects[0].Reason != RejectOutOfOrder || rejects[0].Error() != `m.csv:4: field arrived_ms: "1499" is earlier than the previous record (line 3)` {
		t.Errorf("rejections %v", rejects)
	}
	for _, c := range []struct{ in, want string }{
		{"t,p,o\n1,100.5,1\n", `m.csv:2: field p: "100.5" is not a non-negative integer`},
		{"t,p,o\n1,1,1\n2024-05-12 00:00:00,1,1\n", `m.csv:3: field t: "2024-05-12 00:00:00" mixes date-times and numbers in one trace`},
		{"t,p\n1,1\n", `m.csv:1: field o: missing from header "t,p" (name the output column with output_field)`},
	} {
		r, err := NewCSV(strings.NewReader(c.in), "m.csv", Options{TimeField: "t", PromptField: "p", OutputField: "o"})
		if err == nil {
			_, err = readAll(r)
		}
		if err == nil || err.Error() != c.want {
			t.Errorf("%q: %v, want %s", c.in, err, c.want)
		}
	}
}

// Rejections are not sticky; a structural error still is.
func TestRejectionsDoNotEndTheTrace(t *testing.T) {
	in := header + "2023-11-16 18:15:47,0,5\n2023-11-16 18:15:48,3,5\n2023-11-16 18:15:46,3,5\n2023-11-16 18:15:49,3,5\n"
	r, _ := NewCSV(strings.NewReader(in), "c.csv", Options{})
	recs, rejects := drainRejects(t, r)
	if len(recs) != 2 || len(rejects) != 2 || rejects[0].Reason != RejectEmptyPrompt || rejects[1].Reason != RejectOutOfOrder {
		t.Errorf("records %v, rejections %v", recs, rejects)
	}
	if recs[0].ArrivalNS != 1e9 || recs[1].ArrivalNS != 2e9 {
		t.Errorf("times count from the first record, rejected or not: %v", recs)
	}
	j, _ := NewJSONL(strings.NewReader(`{"timestamp":2,"input_tokens":0,"output_tokens":3}`+"\n"+`{"timestamp":1,"input_tokens":4,"output_tokens":3}`+"\n"+`{"timestamp":3,"input_tokens":4,"output_tokens":3}`), "j.jsonl", Options{})
	recs, rejects = drainRejects(t, j)
	if len(recs) != 1 || len(rejects) != 2 || rejects[0].Error() != "j.jsonl:1: field input_tokens: 0 tokens; a prompt needs at least 1" {
		t.Errorf("jsonl: records %v, rejections %v", recs, rejects)
	}
}

// FuzzCSVMapped: any CSV under a column mapping and time unit gives records,
// rejections or one error that names the file and a line.
func FuzzCSVMapped(f *testing.F) {
	for _, name := range []string{"azure2024_sample.csv", "burstgpt_sample.csv"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint8(0), false)
	}
	f.Add([]byte("id,arrived_ms,in,out\n7,1000,12,3.0\n8,1500.5,100.0,4\n"), uint8(1), true)
	f.Add([]byte("arrived_ms,in,out\n2024-05-12 00:00:00-07:00,1,1\n2024-05-12 00:00:00+0700,1,1\n"), uint8(2), true)
	f.Fuzz(func(t *testing.T, data []byte, unit uint8, mapped bool) {
		opt := Options{TimeUnit: []string{"s", "ms", "us", "ns"}[unit%4]}
		if mapped {
			opt.TimeField, opt.PromptField, opt.OutputField = "arrived_ms", "in", "out"
		}
		r, err := NewCSV(bytes.NewReader(data), "fuzz.csv", opt)
		checkStream(t, "fuzz.csv", data, r, err)
	})
}

// FuzzJSONLNested: dotted keys never panic and errors name the line.
func FuzzJSONLNested(f *testing.F) {
	b, err := os.ReadFile(filepath.Join("testdata", "openai_usage_sample.jsonl"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{"created":1,"usage":{"prompt_tokens":{"x":1},"completion_tokens":2}}`))
	f.Add([]byte(`{"created":1,"usage.prompt_tokens":3,"usage":{"completion_tokens":2.0}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := NewJSONL(bytes.NewReader(data), "fuzz.jsonl", Options{TimeField: "created", PromptField: "usage.prompt_tokens", OutputField: "usage.completion_tokens"})
		checkStream(t, "fuzz.jsonl", data, r, err)
	})
}
