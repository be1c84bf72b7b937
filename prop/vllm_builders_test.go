package prop

import (
	"testing"

	"statesim/model"
	"statesim/sched"
	"statesim/step"
)

// judge runs a classifier set up for version, state kind, K and runner over
// one record and returns its first disagreement ("" when it agrees).
func judge(version string, kind model.StateKind, numSpec int, runner string, patches []string, rows ...step.Row) string {
	k := newClassifier(version, kind, false)
	k.withGraphs("none", patches, 256, runner)
	k.withSpec("mtp", numSpec, patches)
	k.withSplitPatches(patches, false)
	return k.check(&step.Record{Step: 1, Rows: rows}, func(*step.Record, *step.Row, sched.Path) {})
}

func draftRow(id int64, q, c, p, drafts int, path sched.Path) step.Row {
	r := row(id, q, c, p, path)
	r.NumDrafts = drafts
	return r
}

// The cases of vLLM's tests/v1/attention/test_gdn_metadata_builder.py
// (added by #34871, 116ed130f): seq_lens, query_lens and
// num_decode_draft_tokens as there (a draft count d >= 0 is a row of
// d drafts; -1 a row without); the expected paths are its expected
// counts (spec decodes decode, every other row prefills). The
// zero-length padded row is left out: statesim schedules no padding.
// Prompts are ours (every non-spec row's prompt is computed).
func TestObserverGDNMetadataBuilderCases(t *testing.T) {
	P, D := sched.PathPrefill, sched.PathDecode
	for name, rows := range map[string][]step.Row{
		"mixed_decode_and_spec_decode":  {draftRow(0, 1, 64, 64, 0, P), draftRow(1, 3, 17, 10, 2, D)},
		"pure_spec_decode":              {draftRow(0, 3, 47, 10, 2, D), draftRow(1, 3, 27, 10, 2, D)},
		"spec_decode_with_real_prefill": {draftRow(0, 50, 50, 100, 0, P), draftRow(1, 3, 17, 10, 2, D)},
		// In the V1 reorder's order (its 1-token row leads); the spec
		// branch picks rows by mask, so the counts are the test's.
		"prefill_decode_and_spec_decode": {draftRow(1, 1, 64, 64, 0, P), draftRow(2, 3, 17, 10, 2, D), draftRow(0, 50, 50, 100, 0, P)},
		"multiple_decodes_reclassified":  {draftRow(0, 1, 39, 39, 0, P), draftRow(1, 1, 49, 49, 0, P), draftRow(2, 1, 59, 59, 0, P), draftRow(3, 3, 17, 10, 2, D)},
	} {
		if got := judge("v0.31", model.GatedDeltaNet, 2, "v1", nil, rows...); got != "" {
			t.Errorf("%s: the observer disagrees with vLLM's expected split: %s", name, got)
		}
		// Before #34871 the 1-token non-spec rows were decodes: the same
		// record is a disagreement there whenever it has one.
		hasShort := false
		for _, r := range rows {
			hasShort = hasShort || r.NumDrafts == 0 && r.NumScheduled == 1
		}
		if got := judge("v0.14", model.GatedDeltaNet, 2, "v1", nil, rows...); hasShort != (got != "") {
			t.Errorf("%s at v0.14: disagreement %q, want one: %v", name, got, hasShort)
		}
	}
	// pure_regular_decode: no speculative config, three 1-token decodes.
	if got := judge("v0.31", model.GatedDeltaNet, 0, "v1", nil, row(0, 1, 39, 39, sched.PathDecode), row(1, 1, 29, 29, sched.PathDecode), row(2, 1, 19, 19, sched.PathDecode)); got != "" {
		t.Errorf("pure_regular_decode: %s", got)
	}
}

// The builders handed num_accepted_tokens: a Mamba1 (or ShortConv) draft
// row prefills, a Mamba2 one decodes; on the V1 runner a Mamba2 row of
// 1 + K tokens without drafts in the step prefills (no
// num_accepted_tokens), on V2 it decodes.
func TestObserverAcceptedTokensPerBuilder(t *testing.T) {
	P, D := sched.PathPrefill, sched.PathDecode
	for _, c := range []struct {
		kind   model.StateKind
		runner string
		row    step.Row
	}{
		{model.Mamba1, "v1", draftRow(0, 2, 4, 4, 1, P)},
		{model.ShortConv, "v2", draftRow(0, 2, 4, 4, 1, P)},
		{model.Mamba2, "v1", draftRow(0, 2, 4, 4, 1, D)},
		{model.Mamba2, "v2", draftRow(0, 2, 4, 4, 1, D)},
		{model.Mamba2, "v1", draftRow(0, 2, 6, 4, 0, P)},
		{model.Mamba2, "v2", draftRow(0, 2, 6, 4, 0, D)},
		// GDN: no draft row, so the non-spec branch at threshold 1.
		{model.GatedDeltaNet, "v2", draftRow(0, 2, 6, 4, 0, P)},
	} {
		if got := judge("v0.31", c.kind, 1, c.runner, nil, c.row); got != "" {
			t.Errorf("%s on %s: %s", c.kind, c.runner, got)
		}
		wrong := c.row
		wrong.Path = 1 - wrong.Path
		wrong.HasInitialState = true
		if got := judge("v0.31", c.kind, 1, c.runner, nil, wrong); got == "" {
			t.Errorf("%s on %s: a row on the %s path passed", c.kind, c.runner, wrong.Path)
		}
	}
}

// sort_batch_req_ids' cases from tests/v1/worker/test_gpu_batch_ordering.py
// (@ 7f7a32cfe, no drafts): with K = 1 "d1", "d2" (2 tokens) lead, then
// the 1-token tail, then the long prefill; and #47808's key puts a draft
// row ahead of a draftless row of the same length. The observer checks an
// order, so each case is a record in that order (agrees) and one with two
// rows swapped (disagrees).
func TestObserverV2SortKey(t *testing.T) {
	P, D := sched.PathPrefill, sched.PathDecode
	ok := []step.Row{draftRow(1, 2, 9, 9, 0, D), draftRow(2, 2, 9, 9, 0, D), draftRow(3, 1, 5, 9, 0, D), draftRow(4, 100, 0, 200, 0, P)}
	if got := judge("v0.31", model.Mamba2, 1, "v2", nil, ok...); got != "" {
		t.Errorf("test_sort_batch_req_ids_spec_decode's order: %s", got)
	}
	bad := []step.Row{ok[2], ok[0], ok[1], ok[3]}
	if got := judge("v0.31", model.Mamba2, 1, "v2", nil, bad...); got == "" {
		t.Error("a 1-token tail ahead of the uniform decodes passed")
	}
	// #47808: a prompt chunk of 1 + K tokens behind a draft decode agrees
	// at v0.28 and later; ahead of it, only before #47808.
	chunkFirst := []step.Row{draftRow(0, 2, 2, 4, 0, P), draftRow(1, 2, 1, 1, 1, P)}
	if got := judge("v0.27", model.Mamba2, 1, "v2", nil, chunkFirst...); got != "" {
		t.Errorf("v0.27: %s", got)
	}
	if got := judge("v0.28", model.Mamba2, 1, "v2", nil, chunkFirst...); got == "" {
		t.Error("v0.28: a draftless chunk ahead of a draft decode passed")
	}
	draftFirst := []step.Row{draftRow(1, 2, 1, 1, 1, D), draftRow(0, 2, 2, 4, 0, P)}
	if got := judge("v0.28", model.Mamba2, 1, "v2", nil, draftFirst...); got != "" {
		t.Errorf("v0.28: %s", got)
	}
}

// A padded prompt tail (#45237: 64 of 65 prompt tokens computed, 1 + K
// scheduled with K placeholder drafts) beside a draft decode, on Mamba2:
// a prefill before #55178 (it is still prefilling), a decode with it
// (mamba_attn.py @ 009b0f3b, padded_prompt_tail_rows). A padded new
// one-token prompt has no state: a prefill either way. The observer
// judges each record one way only.
func TestObserverPaddedTail(t *testing.T) {
	P, D := sched.PathPrefill, sched.PathDecode
	tail := func(path sched.Path) []step.Row {
		return []step.Row{draftRow(0, 4, 70, 64, 3, D), draftRow(1, 4, 64, 65, 3, path)}
	}
	for _, c := range []struct {
		version string
		patches []string
		want    sched.Path
	}{
		{"v0.28", nil, P}, {"v0.28", []string{"+55178"}, D}, {"v0.31", nil, D}, {"v0.31", []string{"-55178"}, P},
	} {
		other := D
		if c.want == D {
			other = P
		}
		if got := judge(c.version, model.Mamba2, 3, "v1", c.patches, tail(c.want)...); got != "" {
			t.Errorf("%s %v: the tail on %s: %s", c.version, c.patches, c.want, got)
		}
		if got := judge(c.version, model.Mamba2, 3, "v1", c.patches, tail(other)...); got == "" {
			t.Errorf("%s %v: the tail on %s: no disagreement", c.version, c.patches, other)
		}
	}
	fresh := []step.Row{draftRow(0, 4, 70, 64, 3, D), draftRow(1, 4, 0, 1, 3, P)}
	fresh[1].HasInitialState = false
	if got := judge("v0.31", model.Mamba2, 3, "v1", nil, fresh...); got != "" {
		t.Errorf("a padded new prompt at v0.31: %s", got)
	}
}
