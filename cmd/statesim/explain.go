package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"statesim/explain"
	"statesim/setup"
)

func init() {
	commands["explain"] = command{
		summary: "explain SCENARIO --request ID [--json] [--set key.path=value]...\n      one request's life, step by step: chunks, classification, kernel path, slots and what they held",
		run:     cmdExplain,
	}
}

func cmdExplain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("explain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	id := fs.Int64("request", -1, "request `ID` to follow (ids are assigned in arrival order from 0)")
	asJSON := fs.Bool("json", false, "print the life as JSON")
	var sets setFlags
	fs.Var(&sets, "set", "override a scenario field (repeatable)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "statesim explain: want exactly one SCENARIO, got %d\n", len(pos))
		return exitBadInput
	}
	if *id < 0 {
		fmt.Fprintln(stderr, "statesim explain: --request ID is required (a non-negative request id)")
		return exitBadInput
	}
	st, err := setup.Load(pos[0], sets)
	if err != nil {
		fmt.Fprintf(stderr, "statesim: %v\n", err)
		return exitBadInput
	}
	life, rep, err := explain.Explain(st, *id)
	if err != nil {
		return reportRunError(stderr, err)
	}
	if !life.Found && *id >= rep.Requests {
		fmt.Fprintf(stderr, "statesim explain: request %d does not exist: the run had %d requests (ids 0..%d)\n", *id, rep.Requests, rep.Requests-1)
		return exitBadInput
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(life)
	} else {
		err = life.WriteText(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "statesim: %v\n", err)
		return exitInternal
	}
	if len(life.Violations) > 0 {
		return exitViolations
	}
	return exitClean
}
