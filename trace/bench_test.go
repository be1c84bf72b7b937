package trace

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"testing"
)

// drain reads r to the end and counts its records.
func drain(b *testing.B, r Reader) int {
	n := 0
	for {
		_, err := r.Next()
		if err == io.EOF {
			return n
		}
		if err != nil {
			b.Fatal(err)
		}
		n++
	}
}

func reportRecords(b *testing.B, perOp int) {
	b.ReportMetric(float64(perOp)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkAzureCSV parses the whole Azure hour (19,366 requests), or the
// checked-in sample if the copy is missing, from memory.
func BenchmarkAzureCSV(b *testing.B) {
	path := sharedTrace
	if _, err := os.Stat(path); err != nil {
		path = sampleTrace
	}
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		r, err := NewAzureCSV(bytes.NewReader(data), path, Options{})
		if err != nil {
			b.Fatal(err)
		}
		n = drain(b, r)
	}
	reportRecords(b, n)
}

// BenchmarkJSONL parses the checked-in sample as JSON Lines, for comparison.
func BenchmarkJSONL(b *testing.B) {
	data, err := os.ReadFile(sampleTrace)
	if err != nil {
		b.Fatal(err)
	}
	r, _ := NewAzureCSV(bytes.NewReader(data), "sample.csv", Options{})
	var buf bytes.Buffer
	for {
		rec, err := r.Next()
		if err != nil {
			break
		}
		fmt.Fprintf(&buf, `{"timestamp":%d.%09d,"input_tokens":%d,"output_tokens":%d}`+"\n",
			1700000000+rec.ArrivalNS/1e9, rec.ArrivalNS%1e9, rec.PromptTokens, rec.OutputTokens)
	}
	jsonl := buf.Bytes()
	b.SetBytes(int64(len(jsonl)))
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		r, err := NewJSONL(bytes.NewReader(jsonl), "sample.jsonl", Options{})
		if err != nil {
			b.Fatal(err)
		}
		n = drain(b, r)
	}
	reportRecords(b, n)
}

// BenchmarkSynthetic generates a million-request trace per op.
func BenchmarkSynthetic(b *testing.B) {
	const n = 1_000_000
	b.ReportAllocs()
	for b.Loop() {
		if got := drain(b, Synthetic(n, 1, 1e6, 1020, 129)); got != n {
			b.Fatalf("%d records", got)
		}
	}
	reportRecords(b, n)
}
