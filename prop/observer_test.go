package prop

import (
	"strings"
	"testing"

	"statesim/engine"
	"statesim/internal/testtier"
	"statesim/sched"
	"statesim/setup"
	"statesim/step"
)

// TestEveryVersionHasAClassRule: a version sched knows must have its own
// row in classRules; a new version judged by no rule fails here, loudly,
// and in every run's observer (TestObserverRejectsAnUnknownVersion).
func TestEveryVersionHasAClassRule(t *testing.T) {
	for _, v := range sched.VersionNames() {
		if _, ok := classRules[v]; !ok {
			t.Errorf("vllm_version %s has no row in prop's classRules: add its reorder and split", v)
		}
	}
}

func TestObserverRejectsAnUnknownVersion(t *testing.T) {
	k := newClassifier("v9.99", "", false)
	got := k.check(&step.Record{Rows: []step.Row{{NumScheduled: 4, NumPrompt: 4}}}, func(*step.Record, *step.Row, sched.Path) {})
	if !strings.Contains(got, `"v9.99" has no classification rule`) {
		t.Fatalf("an unknown version passed the observer: %q", got)
	}
}

// row is a step row as the record carries it.
func row(id int64, q, c, p int, path sched.Path) step.Row {
	return step.Row{RequestID: id, NumScheduled: q, NumComputed: c, NumPrompt: p, Path: path, HasInitialState: path == sched.PathDecode || c > 0}
}

// observed feeds one record to a fresh observer of a tiny-hybrid scenario
// under version and returns what it saw.
func observed(t *testing.T, version string, rows ...step.Row) *Outcome {
	t.Helper()
	return observedOn(t, "tiny-hybrid", version, rows...)
}

// observedOn is observed for a scenario of the named model.
func observedOn(t *testing.T, model, version string, rows ...step.Row) *Outcome {
	t.Helper()
	p := &Params{Requests: []Request{{Prompt: 8, Output: 2}}, MaxNumBatchedTokens: 8, MaxNumSeqs: 4, StateIndexBits: 64,
		Seed: 1, Preset: model, Version: version, Policy: "fcfs", ChunkedPrefill: true, Backend: "symbolic"}
	sc, err := p.Scenario("x", "x.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	st, err := setup.Resolve(sc)
	if err != nil {
		t.Fatal(err)
	}
	o := &Outcome{}
	rec := &step.Record{Step: 7, Rows: rows, NumBlocks: 2, BlocksFree: 1}
	o.observe(st)(rec)
	return o
}

// TestObserverCatchesAWrongPath: the observer derives each row's path from
// the version's rules, not from the record's Path. A record that puts a
// row on the wrong path, in either direction, is caught; a record that
// agrees with the rules passes; and a new 1-token row the rules send to
// the decode kernel counts as a decode before prefill even when the
// record claims the prefill path.
func TestObserverCatchesAWrongPath(t *testing.T) {
	dec, pre := sched.PathDecode, sched.PathPrefill
	for _, c := range []struct {
		name           string
		version        string
		rows           []step.Row
		wrong, noState bool
	}{
		{"fixed, as the rules say", "fixed", []step.Row{row(1, 1, 9, 5, dec), row(2, 1, 0, 8, pre)}, false, false},
		{"fixed, a new 1-token row on the decode path", "fixed", []step.Row{row(1, 1, 9, 5, dec), row(2, 1, 0, 8, dec)}, true, true},
		{"fixed, a decode sent to prefill", "fixed", []step.Row{row(1, 1, 9, 5, pre), row(2, 1, 0, 8, pre)}, true, false},
		{"v0.19, a 1-token chunk of an unfinished prompt is not a decode", "v0.19", []step.Row{row(1, 1, 3, 5, dec)}, true, false},
		{"v0.22, a 1-token chunk with state is a decode", "v0.22", []step.Row{row(1, 1, 3, 5, dec)}, false, false},
		{"v0.14's residue, as the rules say", "v0.14", []step.Row{row(1, 1, 9, 5, dec), row(2, 1, 0, 8, dec)}, false, true},
		{"v0.14's residue, hidden by the record", "v0.14", []step.Row{row(1, 1, 9, 5, dec), row(2, 1, 0, 8, pre)}, true, true},
		{"v0.14, a prefill before a decode", "v0.14", []step.Row{row(2, 4, 0, 8, pre), row(1, 1, 9, 5, pre)}, true, false},
		{"v0.13, a new 1-token row first is a decode", "v0.13", []step.Row{row(2, 1, 0, 8, dec), row(1, 5, 3, 8, pre)}, false, true},
		{"v0.13, the split stops at the first long row", "v0.13", []step.Row{row(1, 1, 9, 5, dec), row(3, 5, 3, 8, pre), row(2, 1, 0, 8, dec)}, true, true},
		{"v0, never a decode", "v0", []step.Row{row(1, 1, 9, 5, dec)}, true, false},
		{"v0, as the rules say", "v0", []step.Row{row(1, 1, 9, 5, pre), row(2, 3, 0, 3, pre)}, false, false},
		{"has_initial_state wrong", "fixed", []step.Row{{RequestID: 1, NumScheduled: 4, NumComputed: 4, NumPrompt: 8, Path: pre}}, true, false},
	} {
		o := observed(t, c.version, c.rows...)
		if (o.Classification != "") != c.wrong {
			t.Errorf("%s: classification %q, want a disagreement: %v", c.name, o.Classification, c.wrong)
		}
		if (o.DecodeBeforePrefill != "") != c.noState {
			t.Errorf("%s: decode before prefill %q, want one: %v", c.name, o.DecodeBeforePrefill, c.noState)
		}
	}
}

// TestObserverCatchesAWrongGDNPath: on models split by the GDN builder
// the observer judges rows by that builder's rule, not the Mamba one: a
// new 1-token row beside decodes is a GDN decode until #51565 (v0.31) and
// a prefill after it, and a record that says otherwise, in either
// direction, is caught.
func TestObserverCatchesAWrongGDNPath(t *testing.T) {
	dec, pre := sched.PathDecode, sched.PathPrefill
	for _, m := range GDNModels {
		for _, c := range []struct {
			name           string
			version        string
			rows           []step.Row
			wrong, noState bool
		}{
			{"v0.22, the GDN imposter, as the rules say", "v0.22", []step.Row{row(1, 1, 9, 5, dec), row(2, 1, 0, 1, dec)}, false, true},
			{"v0.22, the GDN imposter hidden by the record (the Mamba builders' path)", "v0.22", []step.Row{row(1, 1, 9, 5, dec), row(2, 1, 0, 1, pre)}, true, true},
			{"v0.30, an alias of v0.22: still the imposter", "v0.30", []step.Row{row(1, 1, 9, 5, dec), row(2, 1, 0, 1, pre)}, true, true},
			{"v0.19, a GDN short extend decodes (the Mamba rule would not)", "v0.19", []step.Row{row(1, 1, 3, 5, dec)}, false, false},
			{"v0.31, a new 1-token row takes prefill", "v0.31", []step.Row{row(1, 1, 9, 5, dec), row(2, 1, 0, 1, pre)}, false, false},
			{"v0.31, a new 1-token row on the decode path", "v0.31", []step.Row{row(1, 1, 9, 5, dec), row(2, 1, 0, 1, dec)}, true, true},
			{"fixed, a 1-token chunk with state decodes", "fixed", []step.Row{row(1, 1, 3, 5, dec)}, false, false},
		} {
			o := observedOn(t, m, c.version, c.rows...)
			if (o.Classification != "") != c.wrong {
				t.Errorf("%s, %s: classification %q, want a disagreement: %v", m, c.name, o.Classification, c.wrong)
			}
			if (o.DecodeBeforePrefill != "") != c.noState {
				t.Errorf("%s, %s: decode before prefill %q, want one: %v", m, c.name, o.DecodeBeforePrefill, c.noState)
			}
		}
	}
}

// TestRegionFour: the four-region reorder of #37303 (VLLM-FACTS-CURRENT
// §6) and the split with treat_short_extends_as_decodes=False, for the
// version rows that will use them.
func TestRegionFour(t *testing.T) {
	for _, c := range []struct{ q, c, p, region int }{
		{1, 9, 5, 0}, // decode: has context, short, prompt done
		{1, 3, 5, 1}, // short extend
		{4, 3, 5, 2}, // long extend
		{1, 0, 5, 3}, // brand new, even with one token: prefill
		{4, 0, 5, 3},
	} {
		if got := regionFour(c.q, c.c, c.p, 1); got != c.region {
			t.Errorf("q=%d c=%d p=%d: region %d, want %d", c.q, c.c, c.p, got, c.region)
		}
		if dec := doneDecoding(c.q, c.c, c.p, 1); dec != (c.region == 0) {
			t.Errorf("q=%d c=%d p=%d: decode %v under treat_short_extends_as_decodes=False", c.q, c.c, c.p, dec)
		}
	}
}

// TestObserverAgreesWithTheScheduler: over generated runs of every
// version, the scheduler's classifier and the observer's rules agree on
// every row of every step. Half the runs cut every prompt chunk to one or
// two tokens (long_prefill_token_threshold ≤ 2 under a small budget), so
// that batches hold short extends beside decodes and the four-region
// reorder has rows to order; the test requires some.
func TestObserverAgreesWithTheScheduler(t *testing.T) {
	r := NewRunner(t.TempDir(), nil)
	mixed := 0
	for _, v := range sched.VersionNames() {
		short := BugA(v)
		short.MaxBudget, short.MaxLongPrefill = 8, 2
		gdn := GDN(v)
		gdn.MaxBudget, gdn.MaxLongPrefill = 8, 2
		for _, c := range []Config{BugA(v), short, gdn} {
			for seed := int64(1); seed <= int64(testtier.Sized(20, 60)); seed++ {
				p := Sample(c, seed)
				sc, err := r.Build(p, "agree")
				if err != nil {
					t.Fatal(err)
				}
				k := classifierFor(sc)
				disagree := ""
				_, err = engine.Run(sc, engine.Options{Observe: func(rec *step.Record) {
					if s := k.check(rec, func(*step.Record, *step.Row, sched.Path) {}); s != "" && disagree == "" {
						disagree = s
					}
					var regions [4]bool
					for _, row := range rec.Rows {
						regions[regionFour(row.NumScheduled, row.NumComputed, row.NumPrompt, 1)] = true
					}
					// Counted where the version's reorder has the short
					// extend region of its own (a 1-token chunk of a
					// prompt in progress).
					if fourRegion := k.rule.region != nil && k.rule.region(1, 3, 5, 1) == 1; fourRegion && regions[0] && regions[1] {
						mixed++
					}
				}})
				if err != nil {
					t.Fatalf("%s: %v", p, err)
				}
				if disagree != "" {
					t.Fatalf("%s: %s", p, disagree)
				}
			}
		}
	}
	if mixed == 0 {
		t.Fatal("no four-region batch held a decode and a short extend: the reorder's order went untested")
	}
	t.Logf("%d four-region batches with decodes and short extends", mixed)
}
