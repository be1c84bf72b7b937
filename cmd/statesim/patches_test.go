package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"statesim/sched"
)

// Each PR has a row: its number, its state upstream (merged on a date, or
// open or closed unmerged as of one), its first release and what it changes.
func TestPatchesListing(t *testing.T) {
	code, out, errs := runCLI("patches")
	if code != exitClean {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, s := range sched.PatchStates() {
		state := "merged " + s.Merged
		if s.Open {
			state = "open as of " + s.AsOf
		}
		if s.Closed {
			state = "closed unmerged as of " + s.AsOf
		}
		rel := s.Release
		if rel == "" {
			rel = "-"
		}
		row := regexp.MustCompile(fmt.Sprintf(`(?m)^#%d +%s +%s +\S+ +%s$`,
			s.PR, regexp.QuoteMeta(state), regexp.QuoteMeta(rel), regexp.QuoteMeta(s.What)))
		if !row.MatchString(out) {
			t.Errorf("no row for #%d (%s, %s):\n%s", s.PR, state, rel, out)
		}
		if s.Note != "" && !strings.Contains(out, "note: "+s.Note) {
			t.Errorf("#%d's note is not printed", s.PR)
		}
	}
	if code, _, errs := runCLI("patches", "55898"); code != exitBadInput || !strings.Contains(errs, "takes no arguments") {
		t.Errorf("patches 55898: exit %d, %q", code, errs)
	}
}

func TestPatchesJSON(t *testing.T) {
	code, out, errs := runCLI("patches", "--json")
	if code != exitClean {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var got []patchJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	states := sched.PatchStates()
	if len(got) != len(states) {
		t.Fatalf("%d entries, want %d", len(got), len(states))
	}
	for i, s := range states {
		g := got[i]
		wantState := map[bool]string{true: "open", false: "merged"}[s.Open]
		if s.Closed {
			wantState = "closed"
		}
		if g.PR != s.PR || g.State != wantState || g.Merged != s.Merged || g.AsOf != s.AsOf ||
			g.FirstRelease != s.Release || g.Row != s.In || g.Note != s.Note || !slices.Equal(g.Needs, s.Needs) {
			t.Errorf("entry %d: %+v, want %+v", i, g, s)
		}
	}
	// needs is a list even when empty, never null.
	if strings.Contains(out, `"needs": null`) {
		t.Error("needs printed as null")
	}
}

func TestCheckHelpNamesPatches(t *testing.T) {
	_, out, errs := runCLI("check", "--help")
	if !strings.Contains(out+errs, "'statesim patches' lists each PR and its state upstream") {
		t.Errorf("check --help does not point at statesim patches:\n%s%s", out, errs)
	}
}
