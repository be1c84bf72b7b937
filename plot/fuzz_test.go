package plot

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzReadTrace: any bytes are a whole trace or an error that names a
// line (or says the trace is empty or compressed), never a panic; a trace
// read has steps, and cutting its last line off is refused.
func FuzzReadTrace(f *testing.F) {
	l := `{"v":2,"step":1,"start_ns":0,"end_ns":5,"num_scheduled_tokens":3,"num_decodes":0,"preempted":[],"rows":[{"row":0,"request_id":0,"scheduled":3,"computed":0,"prompt":3,"region":"prefill","path":"prefill","has_initial_state":false,"slots":[1,4294967297]}]}` + "\n"
	l2 := strings.Replace(strings.Replace(l, `"step":1`, `"step":3`, 1), `"start_ns":0,"end_ns":5`, `"start_ns":5,"end_ns":9`, 1)
	f.Add([]byte(withEnd(l + l2)))
	f.Add([]byte(withEnd(l)))
	f.Add([]byte(l + l2))
	f.Add([]byte(withEnd(l2 + l)))
	f.Fuzz(func(t *testing.T, data []byte) {
		run, err := ReadTrace(bytes.NewReader(data), "fuzz")
		if err != nil {
			m := err.Error()
			if !strings.HasPrefix(m, "line ") && !strings.HasPrefix(m, "no ") && !strings.HasPrefix(m, "gzip") {
				t.Fatalf("error names no line: %v", err)
			}
			return
		}
		if run.NumSteps < 1 || len(run.Bins) == 0 {
			t.Fatalf("read a trace of %d steps, %d bins", run.NumSteps, len(run.Bins))
		}
		body := bytes.TrimRight(data, "\n")
		if i := bytes.LastIndexByte(body, '\n'); i >= 0 {
			if _, err := ReadTrace(bytes.NewReader(data[:i+1]), "cut"); err == nil {
				t.Fatalf("the trace without its last line was read:\n%s", data[:i+1])
			}
		}
	})
}
