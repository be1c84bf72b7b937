package statesim

import (
	"statesim/engine"
	"statesim/report"
	"statesim/scenarios"
)

// Options tune one run; see engine.Options.
type Options = engine.Options

// Report is a run's result; see package report.
type Report = report.Report

// Run replays a scenario and returns its report (engine.Run).
func Run(sc *scenarios.Scenario, opt Options) (*Report, error) { return engine.Run(sc, opt) }
