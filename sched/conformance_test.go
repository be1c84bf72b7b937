package sched

import (
	"fmt"
	"slices"
	"testing"
)

// Conformance with vLLM's own unit tests. The inputs and expected outputs
// below are the cases of vLLM's tests (facts about its behaviour); the
// test code is ours.

// reorderCase is one case of tests/v1/attention/test_batch_reordering.py:
// rows as (num_scheduled, num_computed, num_prompt) and the expected order
// of the original row indices after reorder_batch_to_split_decodes_and_prefills.
type reorderCase struct {
	name     string
	rows     [][3]int
	want     []int
	modified bool
}

// The version of the test before PR #37303 (commit 00bcef11, rows without
// a prompt length): the v0.13 region rule, num_scheduled ≤ 1 first.
var reorderCasesV013 = []reorderCase{
	{"all_decodes", [][3]int{{1, 10, 0}, {1, 20, 0}, {1, 30, 0}}, []int{0, 1, 2}, false},
	{"all_prefills", [][3]int{{100, 100, 0}, {200, 200, 0}, {300, 300, 0}}, []int{0, 1, 2}, false},
	{"mixed_interleaved", [][3]int{{100, 100, 0}, {1, 10, 0}, {200, 200, 0}, {1, 20, 0}}, []int{3, 1, 2, 0}, true},
	{"already_ordered", [][3]int{{1, 10, 0}, {1, 20, 0}, {100, 100, 0}, {200, 0, 0}}, []int{0, 1, 2, 3}, false},
	{"single_request", [][3]int{{1, 10, 0}}, []int{0}, false},
	{"decodes_at_end", [][3]int{{100, 100, 0}, {200, 200, 0}, {1, 10, 0}, {1, 20, 0}}, []int{2, 3, 0, 1}, true},
	{"decode_extend_prefill", [][3]int{{100, 0, 0}, {10, 50, 0}, {1, 10, 0}}, []int{2, 1, 0}, true},
	{"extend_prefill_only", [][3]int{{100, 0, 0}, {10, 50, 0}, {200, 0, 0}, {20, 75, 0}}, []int{3, 1, 2, 0}, true},
	{"complicated_mixed_interleaved", [][3]int{{1, 20, 0}, {1, 50, 0}, {374, 0, 0}, {300, 20, 0}, {1, 20, 0},
		{256, 0, 0}, {1, 5, 0}, {27, 0, 0}, {1, 4, 0}}, []int{0, 1, 6, 8, 4, 3, 2, 7, 5}, true},
}

// The version after PR #37303: four regions, rows with their prompt length.
// (Its cases with decode_threshold 2, 4 or 5 are spec-decode thresholds,
// not the Mamba builders' 1, and are left out.)
var reorderCasesFour = []reorderCase{
	{"all_decodes", [][3]int{{1, 10, 10}, {1, 20, 20}, {1, 30, 30}}, []int{0, 1, 2}, false},
	{"all_long_extends", [][3]int{{100, 100, 100}, {200, 200, 200}, {300, 300, 300}}, []int{0, 1, 2}, false},
	{"mixed_decodes_long_extends", [][3]int{{100, 100, 100}, {1, 10, 10}, {200, 200, 200}, {1, 20, 20}}, []int{3, 1, 2, 0}, true},
	{"already_ordered", [][3]int{{1, 10, 10}, {1, 20, 20}, {100, 100, 100}, {200, 0, 200}}, []int{0, 1, 2, 3}, false},
	{"single_request", [][3]int{{1, 10, 10}}, []int{0}, false},
	{"decodes_at_end", [][3]int{{100, 100, 100}, {200, 200, 200}, {1, 10, 10}, {1, 20, 20}}, []int{2, 3, 0, 1}, true},
	{"decode_long_extend_prefill", [][3]int{{100, 0, 100}, {10, 50, 50}, {1, 10, 10}}, []int{2, 1, 0}, true},
	{"long_extend_prefill_only", [][3]int{{100, 0, 100}, {10, 50, 50}, {200, 0, 200}, {20, 75, 75}}, []int{3, 1, 2, 0}, true},
	{"complicated_mixed", [][3]int{{1, 20, 20}, {1, 50, 50}, {374, 0, 374}, {300, 20, 20}, {1, 20, 20},
		{256, 0, 256}, {1, 5, 5}, {27, 0, 27}, {1, 4, 4}}, []int{0, 1, 6, 8, 4, 3, 2, 7, 5}, true},
	{"new_request_single_token_prefill", [][3]int{{100, 0, 100}, {1, 0, 1}, {50, 100, 100}, {1, 10, 10}}, []int{3, 2, 0, 1}, true},
	{"multiple_new_requests_single_token_prefill", [][3]int{{1, 0, 1}, {1, 0, 1}, {1, 50, 50}, {200, 0, 200}}, []int{2, 1, 0, 3}, true},
	{"four_way_already_ordered", [][3]int{{1, 100, 100}, {1, 50, 100}, {10, 50, 100}, {100, 0, 100}}, []int{0, 1, 2, 3}, false},
	{"four_way_needs_reorder", [][3]int{{100, 0, 100}, {1, 50, 100}, {1, 100, 100}, {10, 50, 100}}, []int{2, 1, 3, 0}, true},
}

// reorderCasesV014 are the cases on which #32118's rule must agree with
// vLLM's tests: every v0.13-era case (no row there is new with one token,
// so both rules give the same regions) and the four-region cases with no
// short extend, where new 1-token rows are prefills.
func reorderCasesV014() []reorderCase {
	cs := append([]reorderCase(nil), reorderCasesV013...)
	for _, c := range reorderCasesFour {
		if c.name == "new_request_single_token_prefill" || c.name == "multiple_new_requests_single_token_prefill" {
			cs = append(cs, c)
		}
	}
	return cs
}

func rowsOf(spec [][3]int) []Row {
	rows := make([]Row, len(spec))
	for i, s := range spec {
		rows[i] = Row{Req: &Request{ID: RequestID(i), NumPromptTokens: s[2]}, NumScheduled: s[0], NumComputed: s[1]}
	}
	return rows
}

func TestReorderConformance(t *testing.T) {
	for _, set := range []struct {
		rule  Reorder
		cases []reorderCase
	}{{ReorderQueryLen, reorderCasesV013}, {ReorderNewLast, reorderCasesV014()}, {ReorderFourRegion, reorderCasesFour}} {
		for _, c := range set.cases {
			t.Run(fmt.Sprintf("%d/%s", set.rule, c.name), func(t *testing.T) {
				rows := rowsOf(c.rows)
				for i := range rows {
					rows[i].Region = set.rule.region(rows[i].NumScheduled, rows[i].NumComputed, rows[i].Req.NumPromptTokens, decodeThreshold)
				}
				reorder(rows, make([]Row, 0, len(rows)))
				got := make([]int, len(rows))
				for i := range rows {
					got[i] = int(rows[i].Req.ID)
				}
				if !slices.Equal(got, c.want) {
					t.Errorf("order %v, want %v", got, c.want)
				}
				if modified := !isIdentity(got); modified != c.modified {
					t.Errorf("modified %v, want %v", modified, c.modified)
				}
			})
		}
	}
}

func isIdentity(p []int) bool {
	for i, v := range p {
		if v != i {
			return false
		}
	}
	return true
}

// splitCase is one case of tests/v1/attention/test_attention_splitting.py
// (split_decodes_and_prefills, require_uniform off): query lengths, the
// threshold, which rows are still prefilling, the flag, and the expected
// number of decodes. The test's helper gives row i seq_len 10·(i+1).
type splitCase struct {
	name       string
	queryLens  []int
	threshold  int
	prefilling []bool // nil: none
	treatShort bool
	decodes    int
}

var splitCases = []splitCase{
	{"nonuniform_all_ones", []int{1, 1, 1}, 1, nil, true, 3},
	{"nonuniform_all_short_decodes", []int{1, 2, 1, 3, 2, 1, 2}, 3, nil, true, 7},
	{"nonuniform_all_prefills", []int{4, 5, 6, 7}, 3, nil, true, 0},
	{"nonuniform_mixed_batch", []int{2, 1, 3, 4, 5, 6, 7, 8}, 4, nil, true, 4},
	// uniform_short_extend runs with require_uniform, which changes
	// nothing here: every length equals the first.
	{"uniform_short_extend", []int{1, 1}, 1, []bool{false, true}, false, 1},
}

func TestSplitConformance(t *testing.T) {
	for _, c := range splitCases {
		t.Run(c.name, func(t *testing.T) {
			rows := make([]Row, len(c.queryLens))
			for i, q := range c.queryLens {
				ctx := 10*(i+1) - q // seq_len − query_len
				prompt := ctx       // done prefilling
				if c.prefilling != nil && c.prefilling[i] {
					prompt = ctx + q + 1
				}
				rows[i] = Row{Req: &Request{NumPromptTokens: prompt}, NumScheduled: q, NumComputed: ctx, PrefillLen: prompt}
			}
			sp := Split{Threshold: c.threshold}
			if !c.treatShort {
				sp.Force = ForcePrefilling
			}
			if got := sp.numDecodes(rows); got != c.decodes {
				t.Errorf("num_decodes %d, want %d", got, c.decodes)
			}
		})
	}
}

// The Mamba builders' split per version over the batches that separate
// them: [decode, short extend] and [decode, new 1-token], each already in
// region order.
func TestMambaSplitByVersion(t *testing.T) {
	decode := [3]int{1, 10, 10}
	shortExtend := [3]int{1, 5, 10}
	new1 := [3]int{1, 0, 30}
	for _, c := range []struct {
		v    Version
		rows [][3]int
		want int
	}{
		{V014, [][3]int{decode, shortExtend}, 2}, // max_query_len 1: all decodes
		{V014, [][3]int{decode, new1}, 2},        // the imposter door
		{V019, [][3]int{decode, shortExtend}, 1}, // is_prefilling: the short extend takes prefill
		{V019, [][3]int{decode, new1}, 1},
		{V022, [][3]int{decode, shortExtend}, 2}, // #42430: it has state, so it decodes
		{V022, [][3]int{decode, new1}, 1},        // no state: prefill
		{V0, [][3]int{decode, shortExtend}, 0},
	} {
		rows := rowsOf(c.rows)
		if got := Classify(c.v, rows, make([]Row, 0, 2), false); got != c.want {
			t.Errorf("%v %v: num_decodes %d, want %d", c.v, c.rows, got, c.want)
		}
	}
}
