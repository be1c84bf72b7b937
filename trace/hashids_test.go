package trace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The Mooncake sample's hash_ids come back record by record, in order.
func TestMooncakeHashIDs(t *testing.T) {
	r, c, err := Open(filepath.Join("testdata", "mooncake_sample.jsonl"), Options{Format: "mooncake"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	h, ok := r.(HashIDReader)
	if !ok || h.HashBlock() != 512 {
		t.Fatalf("mooncake reader %T is not a HashIDReader of 512 tokens", r)
	}
	want := [][2]uint64{{0, 13}, {0, 33}, {40, 53}, {60, 60}, {61, 62}} // first and last id
	for i, w := range want {
		rec, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		ids := h.HashIDs()
		if uint64(len(ids)) != w[1]-w[0]+1 || ids[0] != w[0] || ids[len(ids)-1] != w[1] {
			t.Fatalf("record %d (%d tokens): ids %v, want %d..%d", i, rec.PromptTokens, ids, w[0], w[1])
		}
		if n := (rec.PromptTokens + 511) / 512; len(ids) != n {
			t.Fatalf("record %d: %d ids for %d tokens", i, len(ids), rec.PromptTokens)
		}
	}
}

// The shared Mooncake trace: every record's ids cover its prompt, and
// some records share a leading run of ids with an earlier one.
func TestMooncakeSyntheticTraceHashIDs(t *testing.T) {
	path := filepath.Join("..", "scenarios", "traces", "mooncake_synthetic_trace.jsonl")
	if _, err := os.Stat(path); err != nil {
		t.Skip("no copy of the Mooncake trace:", err)
	}
	r, c, err := Open(path, Options{Format: "mooncake"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	h := r.(HashIDReader)
	firstIDs := map[uint64]bool{}
	n, sharing := 0, 0
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		ids := h.HashIDs()
		if len(ids) != (rec.PromptTokens+511)/512 {
			t.Fatalf("line %d: %d ids for %d tokens", rec.Line, len(ids), rec.PromptTokens)
		}
		if firstIDs[ids[0]] {
			sharing++
		}
		firstIDs[ids[0]] = true
		n++
	}
	if n != 3993 || sharing == 0 {
		t.Fatalf("%d records, %d sharing a first block with an earlier one", n, sharing)
	}
}

// A record without hash_ids has none; a generic JSONL trace reads none
// unless asked; a HashField names another key.
func TestHashIDsOptional(t *testing.T) {
	data := `{"timestamp": 0, "input_length": 10, "output_length": 1}
{"timestamp": 1, "input_length": 600, "output_length": 1, "hash_ids": null}
{"timestamp": 2, "input_length": 600, "output_length": 1, "hash_ids": [ 7 , 9 ]}
`
	r, err := NewJSONL(strings.NewReader(data), "t.jsonl", Options{Format: "mooncake"})
	if err != nil {
		t.Fatal(err)
	}
	h := r.(HashIDReader)
	for i, want := range []string{"[]", "[]", "[7 9]"} {
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(h.HashIDs()); got != want || (want == "[]") != (h.HashIDs() == nil) {
			t.Fatalf("record %d: ids %s, want %s", i, got, want)
		}
	}
	r, _ = NewJSONL(strings.NewReader(`{"timestamp": 0, "input_tokens": 3, "output_tokens": 1, "hash_ids": [1]}`), "t.jsonl", Options{})
	if _, err := r.Next(); err != nil || r.(HashIDReader).HashIDs() != nil {
		t.Fatalf("generic JSONL read hash_ids (%v)", err)
	}
	r, _ = NewJSONL(strings.NewReader(`{"timestamp": 0, "input_tokens": 3, "output_tokens": 1, "blocks": [4, 5]}`), "t.jsonl", Options{HashField: "blocks", HashBlock: 2})
	if _, err := r.Next(); err != nil || fmt.Sprint(r.(HashIDReader).HashIDs()) != "[4 5]" {
		t.Fatalf("hash_field blocks: %v, %v", r.(HashIDReader).HashIDs(), err)
	}
	if _, err := NewCSV(strings.NewReader(header), "t.csv", Options{HashField: "hash_ids"}); err == nil {
		t.Fatal("a CSV trace accepted a hash field")
	}
}

// Bad hash_ids fail the line as FILE:LINE: field hash_ids: problem.
func TestHashIDsErrors(t *testing.T) {
	ok := `{"timestamp": 0, "input_length": 512, "output_length": 1, "hash_ids": [0]}` + "\n"
	for _, c := range []struct{ ids, want string }{
		{`[0, 1, 2]`, "3 ids for a 1000-token prompt; at 512 tokens an id it needs 2"},
		{`[0]`, "1 ids for a 1000-token prompt"},
		{`[]`, "0 ids for a 1000-token prompt"},
		{`[0, -1]`, "is not an array of non-negative integers (element 1)"},
		{`[0, 1.5]`, "is not an array of non-negative integers (element 1)"},
		{`["a"]`, "is not an array of non-negative integers (element 0)"},
		{`{"a": 1}`, "is not an array of non-negative integers"},
		{`7`, "is not an array of non-negative integers"},
		{`[18446744073709551616]`, "has an id out of range (element 0)"},
	} {
		line := `{"timestamp": 5, "input_length": 1000, "output_length": 1, "hash_ids": ` + c.ids + "}"
		r, err := NewJSONL(strings.NewReader(ok+line), "m.jsonl", Options{Format: "mooncake"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
		_, err = r.Next()
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Line != 2 || pe.Field != "hash_ids" || !strings.HasPrefix(err.Error(), "m.jsonl:2: field hash_ids: ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("hash_ids %s: error %v, want m.jsonl:2: field hash_ids: ...%s", c.ids, err, c.want)
		}
	}
	// The largest id fits.
	r, _ := NewJSONL(strings.NewReader(`{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [18446744073709551615]}`), "m.jsonl", Options{Format: "mooncake"})
	if _, err := r.Next(); err != nil || r.(HashIDReader).HashIDs()[0] != 1<<64-1 {
		t.Fatalf("max id: %v", err)
	}
}

// Reading hash_ids allocates nothing per record once the buffer has grown.
func TestHashIDsReuseBuffer(t *testing.T) {
	var b bytes.Buffer
	for i := 0; i < 200; i++ {
		fmt.Fprintf(&b, `{"timestamp": %d, "input_length": 2000, "output_length": 1, "hash_ids": [%d, 1, 2, 3]}`+"\n", i, i)
	}
	r, _ := NewJSONL(&b, "m.jsonl", Options{Format: "mooncake"})
	h := r.(HashIDReader)
	r.Next()
	first := &h.HashIDs()[0]
	for i := 1; i < 200; i++ {
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
		if ids := h.HashIDs(); &ids[0] != first || ids[0] != uint64(i) {
			t.Fatalf("record %d: ids %v in a new buffer", i, ids)
		}
	}
}

func FuzzMooncakeHashIDs(f *testing.F) {
	sample, err := os.ReadFile(filepath.Join("testdata", "mooncake_sample.jsonl"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(sample, uint8(0))
	f.Add([]byte(`{"timestamp": 0, "input_length": 1, "output_length": 0, "hash_ids": [ ]}`+"\n"+`{"timestamp": 1, "input_length": 0, "output_length": 1, "hash_ids": [3,4]}`), uint8(1))
	f.Add([]byte(`{"timestamp": 0, "input_length": 3, "output_length": 1, "hash_ids": [1, 2, 3]}`), uint8(2))
	f.Add([]byte(`{"timestamp": 0, "input_length": 3, "output_length": 1, "hash_ids": [1,`), uint8(7))
	f.Fuzz(func(t *testing.T, data []byte, block uint8) {
		opt := Options{Format: "mooncake", HashBlock: int(block)}
		r, err := NewJSONL(bytes.NewReader(data), "fuzz.jsonl", opt)
		checkStream(t, "fuzz.jsonl", data, r, err)
		if err != nil {
			return
		}
		// Every served record's ids, when present, cover its prompt exactly.
		r, _ = NewJSONL(bytes.NewReader(data), "fuzz.jsonl", opt)
		h := r.(HashIDReader)
		for {
			rec, err := r.Next()
			var rej *RejectError
			if errors.As(err, &rej) {
				continue
			}
			if err != nil {
				return
			}
			if ids := h.HashIDs(); ids != nil && len(ids) != (rec.PromptTokens+h.HashBlock()-1)/h.HashBlock() {
				t.Fatalf("line %d: %d ids for %d tokens of %d", rec.Line, len(ids), rec.PromptTokens, h.HashBlock())
			}
		}
	})
}
