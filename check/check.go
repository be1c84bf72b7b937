package check

import "statesim/invariant"

// The vocabulary lives in package invariant (below the step record, so
// that the record can carry violations); these names keep check the one
// import a checker needs.
type (
	Invariant = invariant.Invariant
	Violation = invariant.Violation
	Recorder  = invariant.Recorder
)

const (
	NoDecodeBeforePrefill = invariant.NoDecodeBeforePrefill
	StaleSlotRead         = invariant.StaleSlotRead
	WrongAddressWrite     = invariant.WrongAddressWrite
	TokenBudget           = invariant.TokenBudget
	MaxNumSeqs            = invariant.MaxNumSeqs
	BlockConservation     = invariant.BlockConservation
	Liveness              = invariant.Liveness
	TimeMonotonic         = invariant.TimeMonotonic
	NumInvariants         = invariant.NumInvariants
)

var (
	NewRecorder = invariant.NewRecorder
	All         = invariant.All
	Parse       = invariant.Parse
)
