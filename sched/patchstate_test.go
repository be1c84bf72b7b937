package sched

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// minorOf reads the minor of "v0.M" or "v0.M.P".
func minorOf(t *testing.T, name string) int {
	t.Helper()
	parts := strings.Split(strings.TrimPrefix(name, "v"), ".")
	if len(parts) < 2 || parts[0] != "0" {
		t.Fatalf("%q: want v0.M[.P]", name)
	}
	m, err := strconv.Atoi(parts[1])
	if err != nil {
		t.Fatalf("%q: %v", name, err)
	}
	return m
}

// rowFor is the release row that stands for vLLM v0.minor: the newest
// row at or below it, or numVersions for a release newer than Fixed
// (not modelled yet).
func rowFor(t *testing.T, minor int) Version {
	if minor > minorOf(t, Fixed.String()) {
		return numVersions
	}
	row := numVersions
	for v := Version(0); v < numVersions; v++ {
		if v != V0 && minorOf(t, releases[v].Name) <= minor {
			row = v
		}
	}
	return row
}

func rowName(v Version) string {
	if v >= numVersions {
		return "none"
	}
	return v.String()
}

// Each PR's state is complete and agrees with its in, or says why not.
func TestPatchStatesConsistent(t *testing.T) {
	date := func(num int, field, s string) time.Time {
		d, err := time.Parse(time.DateOnly, s)
		if err != nil {
			t.Errorf("#%d: %s %q is not a YYYY-MM-DD date", num, field, s)
		}
		return d
	}
	merged := map[int]time.Time{}
	for _, p := range prs {
		s := p.state
		switch {
		case s.merged == "" && s.asOf == "":
			t.Errorf("#%d: neither merged nor open as of a date", p.num)
			continue
		case s.merged != "" && s.asOf != "":
			t.Errorf("#%d: both merged (%s) and open as of %s", p.num, s.merged, s.asOf)
			continue
		case s.closed && s.merged != "":
			t.Errorf("#%d: both merged (%s) and closed unmerged", p.num, s.merged)
			continue
		case s.merged == "":
			date(p.num, "asOf", s.asOf)
			if p.in != numVersions {
				t.Errorf("#%d is open as of %s, yet release row %s contains it", p.num, s.asOf, rowName(p.in))
			}
			if s.release != "" || s.commit != "" {
				t.Errorf("#%d is open but names a release %q or commit %q", p.num, s.release, s.commit)
			}
			continue
		}
		merged[p.num] = date(p.num, "merged", s.merged)
		if s.how == "" {
			t.Errorf("#%d: merged %s, but how its first release is known is not said", p.num, s.merged)
		}
		want := numVersions
		if s.release != "" {
			want = rowFor(t, minorOf(t, s.release))
		}
		if s.release == "" && p.in == numVersions && s.note == "" {
			t.Errorf("#%d merged %s but no release row has it, and no note says why", p.num, s.merged)
		}
		if s.release != "" && want != p.in && s.note == "" {
			t.Errorf("#%d: first in %s (row %s), but in is %s, and no note records the disagreement",
				p.num, s.release, rowName(want), rowName(p.in))
		}
	}
	// A PR merges after the PRs whose code it edits.
	for _, p := range prs {
		for _, n := range p.needs {
			d, ok := merged[p.num]
			base, baseOK := merged[n]
			if ok && baseOK && d.Before(base) {
				t.Errorf("#%d merged %s, before #%d (%s), which it builds on", p.num, p.state.merged, n, prs[prIndex(n)].state.merged)
			}
			if ok && !baseOK {
				t.Errorf("#%d is merged but #%d, which it builds on, is open", p.num, n)
			}
		}
	}
}

func TestPatchStatesFollowTheTable(t *testing.T) {
	got := PatchStates()
	var names []string
	for _, s := range got {
		names = append(names, strconv.Itoa(s.PR))
	}
	if !slices.Equal(names, PatchNames()) {
		t.Fatalf("PatchStates order %v, PatchNames %v", names, PatchNames())
	}
	for i, s := range got {
		p := prs[i]
		in := ""
		if p.in < numVersions {
			in = p.in.String()
		}
		want := fmt.Sprint(p.what, p.needs, in, p.state.merged == "" && !p.state.closed, p.state)
		have := fmt.Sprint(s.What, s.Needs, s.In, s.Open, status{s.Merged, s.Commit, s.Release, s.How, s.AsOf, s.Closed, s.Note})
		if have != want {
			t.Errorf("#%d: PatchStates gives %s, the table %s", p.num, have, want)
		}
	}
	// The listing is a copy: editing it leaves the table alone.
	got[1].Needs[0] = 0
	if prs[1].needs[0] == 0 {
		t.Error("PatchStates shares needs with the table")
	}
}
