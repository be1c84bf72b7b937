// Package runtest is the tests' one way to load a scenario and run it:
// settled as `statesim run` settles it (setup.Load) and replayed by the
// engine, any error failing the test. Only tests import it.
package runtest

import (
	"testing"

	"statesim/engine"
	"statesim/report"
	"statesim/setup"
)

// Load settles a built-in scenario or file with --set overrides.
func Load(t testing.TB, name string, sets ...string) *setup.Setup {
	t.Helper()
	st, err := setup.Load(name, sets)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// Run loads name with sets and replays it with opt.
func Run(t testing.TB, name string, opt engine.Options, sets ...string) *report.Report {
	t.Helper()
	rep, err := engine.RunSetup(Load(t, name, sets...), opt)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return rep
}
