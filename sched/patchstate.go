package sched

// PatchState is one PR engine.patches accepts, with its state upstream.
// It is data for a listing: nothing in the simulation reads it.
type PatchState struct {
	PR   int
	What string
	// Needs are the PRs it builds on (engine.patches refuses it without them).
	Needs []int
	// In names the first modelled release whose row has it; "" when no
	// row does (it exists here only as a patch).
	In string
	// Open: not merged when last seen, on AsOf. Otherwise Merged is the
	// date it merged on main, Commit the merge commit where found.
	Open bool
	AsOf string
	// Closed: closed without merging, seen so on AsOf (Open is false).
	Closed         bool
	Merged, Commit string
	// Release is the first vLLM release that ships it ("" when not
	// established); How says how that is known, or why it is not.
	Release, How string
	// Note is a disagreement with In, or a caveat on the evidence.
	Note string
}

// PatchStates lists the PRs engine.patches accepts, in the order of
// PatchNames.
func PatchStates() []PatchState {
	out := make([]PatchState, len(prs))
	for i, p := range prs {
		in := ""
		if p.in < numVersions {
			in = p.in.String()
		}
		out[i] = PatchState{
			PR: p.num, What: p.what, Needs: append([]int(nil), p.needs...), In: in,
			Open: p.state.merged == "" && !p.state.closed, AsOf: p.state.asOf, Closed: p.state.closed,
			Merged: p.state.merged, Commit: p.state.commit,
			Release: p.state.release, How: p.state.how, Note: p.state.note,
		}
	}
	return out
}
