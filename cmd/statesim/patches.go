package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"statesim/sched"
)

func init() {
	commands["patches"] = command{
		summary: "patches [--json]\n      the PRs engine.patches (and check --patches) accept: what each changes, the first release row here that has it, and its state upstream: merged (date, first release), open or closed unmerged (as of a date)",
		run:     cmdPatches,
	}
}

// patchJSON is one line of `statesim patches --json`.
type patchJSON struct {
	PR    int    `json:"pr"`
	What  string `json:"what"`
	Needs []int  `json:"needs"`
	// Row is the first release row here that has it; absent: none (a patch only).
	Row   string `json:"statesim_release,omitempty"`
	State string `json:"state"` // merged, open or closed (unmerged)
	AsOf  string `json:"as_of,omitempty"`
	// Merged is the date it merged on vLLM's main, Commit its merge commit.
	Merged       string `json:"merged,omitempty"`
	Commit       string `json:"commit,omitempty"`
	FirstRelease string `json:"first_release,omitempty"`
	How          string `json:"how,omitempty"`
	Note         string `json:"note,omitempty"`
}

func cmdPatches(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("patches", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the list as JSON")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "statesim patches: takes no arguments, got %q\n", strings.Join(pos, " "))
		return exitBadInput
	}
	states := sched.PatchStates()
	if *asJSON {
		out := make([]patchJSON, len(states))
		for i, s := range states {
			out[i] = patchJSON{PR: s.PR, What: s.What, Needs: append([]int{}, s.Needs...), Row: s.In,
				State: "merged", AsOf: s.AsOf, Merged: s.Merged, Commit: s.Commit,
				FirstRelease: s.Release, How: s.How, Note: s.Note}
			if s.Open {
				out[i].State = "open"
			}
			if s.Closed {
				out[i].State = "closed"
			}
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			fmt.Fprintf(stderr, "statesim: %v\n", err)
			return exitInternal
		}
		return exitClean
	}
	writePatches(stdout, states)
	return exitClean
}

// writePatches prints the table, then how each first release is known and
// any disagreement with the release rows.
func writePatches(w io.Writer, states []sched.PatchState) {
	fmt.Fprintln(w, "PRs engine.patches accepts (+N adds one to a release, -N removes it); state upstream as last read, evidence in docs/bugs.md \"Patch states\"")
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PR\tupstream\tfirst release\trow here\twhat")
	for _, s := range states {
		state := "merged " + s.Merged
		if s.Open {
			state = "open as of " + s.AsOf
		}
		if s.Closed {
			state = "closed unmerged as of " + s.AsOf
		}
		rel, row := s.Release, s.In
		if rel == "" {
			rel = "-"
		}
		if row == "" {
			row = "none"
		}
		fmt.Fprintf(tw, "#%d\t%s\t%s\t%s\t%s\n", s.PR, state, rel, row, s.What)
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, s := range states {
		if s.How == "" && s.Note == "" {
			continue
		}
		var parts []string
		if s.How != "" {
			parts = append(parts, s.How)
		}
		if s.Note != "" {
			parts = append(parts, "note: "+s.Note)
		}
		fmt.Fprintf(w, "#%d", s.PR)
		if s.Commit != "" {
			fmt.Fprintf(w, " (%s)", s.Commit)
		}
		fmt.Fprintf(w, ": %s", strings.Join(parts, "; "))
		fmt.Fprintln(w)
	}
}
