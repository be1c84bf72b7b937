package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	_ "statesim/backend/mock" // backend kind "mock"
	"statesim/scenarios"
)

// Exit statuses.
const (
	exitClean      = 0
	exitViolations = 1
	exitBadInput   = 2
	exitInternal   = 3
)

func usage() string {
	var b strings.Builder
	b.WriteString("statesim: catch silent state-cache corruption in vLLM serving hybrid Mamba models\n\nusage:\n")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, "  statesim %s\n", commands[n].summary)
	}
	b.WriteString("  statesim scenarios\n      list the built-in scenarios\n\n")
	b.WriteString("SCENARIO is a YAML file or a built-in name (see 'statesim scenarios').\n")
	b.WriteString("Exit status: 0 clean, 1 invariant violations found, 2 bad input.\n")
	return b.String()
}

// command is one subcommand; each lives in its own file and registers
// itself in init, so commands can be added without touching this file.
type command struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

var commands = map[string]command{}

func main() { os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr)) }

func realMain(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage())
		return exitBadInput
	}
	if c, ok := commands[args[0]]; ok {
		return c.run(args[1:], stdout, stderr)
	}
	switch args[0] {
	case "scenarios":
		for _, n := range scenarios.Builtins() {
			sc, err := scenarios.Load(n, nil)
			if err != nil {
				fmt.Fprintf(stderr, "statesim: %v\n", err)
				return exitInternal
			}
			fmt.Fprintf(stdout, "%-28s %s\n", n, sc.Description)
		}
		return exitClean
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage())
		return exitClean
	}
	fmt.Fprintf(stderr, "statesim: unknown command %q\n\n%s", args[0], usage())
	return exitBadInput
}

// setFlags collects repeated --set flags.
type setFlags []string

func (s *setFlags) String() string     { return strings.Join(*s, ",") }
func (s *setFlags) Set(v string) error { *s = append(*s, v); return nil }

// parseInterleaved lets flags follow positional arguments
// ("run imposter --json"), as users type them.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// reportRunError prints a run's error and picks the exit status: bad input
// (a pool too small, a trace line that does not parse) is 2, anything else
// is an internal failure.
func reportRunError(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "statesim: %v\n", err)
	var ie *scenarios.InputError
	if errors.As(err, &ie) {
		return exitBadInput
	}
	return exitInternal
}
