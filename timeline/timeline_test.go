package timeline

import (
	"bytes"
	"encoding/json"
	"statesim/engine"
	"statesim/report"
	"statesim/step"
	"testing"

	"statesim/scenarios"
)

type traceFile struct {
	DisplayTimeUnit string `json:"displayTimeUnit"`
	TraceEvents     []struct {
		Name string          `json:"name"`
		Ph   string          `json:"ph"`
		Ts   *float64        `json:"ts"`
		Dur  *float64        `json:"dur"`
		Pid  *int            `json:"pid"`
		Tid  *int64          `json:"tid"`
		S    string          `json:"s"`
		Args json.RawMessage `json:"args"`
	} `json:"traceEvents"`
}

// record runs a scenario with a timeline and counts, independently, the
// rows the timeline should show.
func record(t *testing.T, name string, sets ...string) (tf traceFile, raw []byte, rep *report.Report, decodeRows, prefillRows int64) {
	t.Helper()
	sc, err := scenarios.Load(name, sets)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	tl := New(&buf)
	opt := engine.Options{Observe: func(rec *step.Record) {
		for i := range rec.Rows {
			if r := &rec.Rows[i]; r.NumComputed >= r.NumPrompt {
				decodeRows++
			} else {
				prefillRows++
			}
		}
		tl.Observe(rec)
	}}
	rep, err = engine.Run(sc, opt)
	if err != nil {
		t.Fatal(err)
	}
	tl.Violations(rep.Violations)
	if err := tl.Close(); err != nil {
		t.Fatal(err)
	}
	raw = buf.Bytes()
	if err := json.Unmarshal(raw, &tf); err != nil {
		t.Fatalf("timeline is not valid JSON: %v", err)
	}
	return tf, raw, rep, decodeRows, prefillRows
}

func TestTimelineStructure(t *testing.T) {
	tf, raw, rep, decodeRows, prefillRows := record(t, "imposter", "workload.num_prompts=256", "engine.gpu_memory_utilization=0.1")
	if tf.DisplayTimeUnit != "ms" || len(tf.TraceEvents) == 0 {
		t.Fatalf("displayTimeUnit %q, %d events", tf.DisplayTimeUnit, len(tf.TraceEvents))
	}
	var steps, spans, decodeSteps, prefills, preempted, finished int64
	named := map[int64]bool{}
	for i, e := range tf.TraceEvents {
		if e.Ts == nil || e.Pid == nil || e.Tid == nil || e.Name == "" {
			t.Fatalf("event %d lacks name, ts, pid or tid: %+v", i, e)
		}
		switch e.Ph {
		case "X":
			if e.Dur == nil || *e.Dur < 0 {
				t.Fatalf("complete event %d (%s) without a duration", i, e.Name)
			}
		case "i":
			if e.S != "t" {
				t.Fatalf("instant event %d (%s) with scope %q", i, e.Name, e.S)
			}
		case "C", "M":
		default:
			t.Fatalf("event %d has phase %q", i, e.Ph)
		}
		var args map[string]any
		if len(e.Args) > 0 {
			if err := json.Unmarshal(e.Args, &args); err != nil {
				t.Fatalf("event %d args: %v", i, err)
			}
		}
		switch {
		case e.Ph == "X" && *e.Pid == pidScheduler:
			steps += int64(args["steps"].(float64))
			spans++
		case e.Ph == "X" && e.Name == "decode":
			decodeSteps += int64(args["steps"].(float64))
		case e.Ph == "X" && e.Name == "prefill chunk":
			prefills++
		case e.Ph == "i" && e.Name == "preempted":
			preempted++
		case e.Ph == "i" && e.Name == "finished":
			finished++
		case e.Ph == "M" && e.Name == "thread_name" && *e.Pid == pidRequests:
			named[*e.Tid] = true
		}
	}
	if steps != rep.Steps || spans*4 > steps {
		t.Errorf("scheduler spans cover %d steps in %d spans, report has %d steps (decode-only steps should merge)", steps, spans, rep.Steps)
	}
	if decodeSteps != decodeRows || prefills != prefillRows {
		t.Errorf("decode spans cover %d steps (want %d), %d prefill chunks (want %d)", decodeSteps, decodeRows, prefills, prefillRows)
	}
	if preempted != rep.Preemptions || preempted == 0 {
		t.Errorf("%d preemption markers, report has %d (the scenario should preempt)", preempted, rep.Preemptions)
	}
	if finished != rep.Finished || int64(len(named)) != rep.Requests {
		t.Errorf("%d finished markers and %d named tracks for %d requests", finished, len(named), rep.Requests)
	}
	// Merging is what keeps files small: far fewer spans than decode rows.
	if n := int64(bytes.Count(raw, []byte(`"name":"decode"`))); n*5 > decodeRows {
		t.Errorf("%d decode spans for %d decode rows: consecutive steps are not merged", n, decodeRows)
	}
}

func TestTimelineMarksTheImposter(t *testing.T) {
	tf, _, rep, _, _ := record(t, "imposter")
	if len(rep.Imposters) == 0 {
		t.Fatal("the imposter scenario found no imposter")
	}
	want := tid(rep.Imposters[0].RequestID)
	found := 0
	for _, e := range tf.TraceEvents {
		if e.Ph == "i" && *e.Tid == want && (e.Name == "new request on the Mamba decode path" || e.Name == "stale-slot-read") {
			found++
		}
	}
	if found != 2 {
		t.Fatalf("imposter request %d: %d markers on its track, want the misrouting and the stale read", rep.Imposters[0].RequestID, found)
	}
}

func TestTimelineIsDeterministic(t *testing.T) {
	_, a, _, _, _ := record(t, "wrap32", "workload.steps=1", "workload.rollouts_per_prompt=4")
	_, b, _, _, _ := record(t, "wrap32", "workload.steps=1", "workload.rollouts_per_prompt=4")
	if !bytes.Equal(a, b) {
		t.Fatal("two runs of the same scenario wrote different timelines")
	}
}

func TestAppendHelpers(t *testing.T) {
	for _, s := range []string{"", "plain", `quote " and \ slash`, "47663 × 90112 ≥ 2^32", "tab\tnewline\n"} {
		var got string
		if err := json.Unmarshal(appendString(nil, s), &got); err != nil || got != s {
			t.Errorf("appendString(%q): %v, round trip %q", s, err, got)
		}
	}
	for ns, want := range map[int64]string{0: "0.000", 7: "0.007", 1500: "1.500", 39976757680: "39976757.680", -5: "0.000"} {
		if got := string(appendUS(nil, ns)); got != want {
			t.Errorf("appendUS(%d) = %s, want %s", ns, got, want)
		}
	}
}

// Every wrapped prefill state write (bug B) is marked on its request's
// track, as many as the report counts.
func TestTimelineMarksEveryWrappedWrite(t *testing.T) {
	tf, _, rep, _, _ := record(t, "wrap32", "workload.steps=1", "workload.rollouts_per_prompt=128",
		"workload.output_len.dist=constant", "workload.output_len.value=8")
	want := rep.Invariants[2].Count
	if rep.Invariants[2].Name != "wrong-address-write" || want == 0 {
		t.Fatalf("invariant 2 is %s with %d violations", rep.Invariants[2].Name, want)
	}
	var n int64
	for _, e := range tf.TraceEvents {
		if e.Ph == "i" && e.Name == "wrapped state write" {
			n++
		}
	}
	if n != want {
		t.Fatalf("%d wrapped-write markers, report counts %d wrong-address writes", n, want)
	}
}
