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
	"statesim/setup"
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
	b.WriteString(scenarioArgHelp)
	b.WriteString("'statesim COMMAND --help' lists a command's flags.\n\n")
	b.WriteString(exitStatusHelp)
	return b.String()
}

const scenarioArgHelp = `SCENARIO is a built-in name (see 'statesim scenarios') or a YAML file. A bare
name is the built-in even if the working directory has a file or directory of
that name; an argument with a '/' or ending in .yaml or .yml is a file (./NAME
for a file named like a built-in).
`

// exitStatusHelp is printed by --help of every command and in the README.
const exitStatusHelp = `Exit status:
  0    clean: every invariant held (check: every property held)
  1    violations found (check: a counterexample, written to --out)
  2    bad input: a scenario, flag, trace or file the command cannot use,
       with FILE:LINE: field PATH: problem where there is a file; also an
       output that cannot be written, with its path (--out, --trace,
       --timeline, stdout), or an output path that is an input
  3    internal error: a bug in statesim (please report it with the command)
  130  sweep interrupted (Ctrl-C); run the same command again to resume
`

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
	out := &checkedWriter{w: stdout}
	code := command1(args, out, stderr)
	if out.err != nil {
		fmt.Fprintf(stderr, "statesim: stdout: cannot write the output: %v\n", out.err)
		return exitBadInput
	}
	return code
}

func command1(args []string, stdout, stderr io.Writer) int {
	if c, ok := commands[args[0]]; ok {
		return c.run(args[1:], stdout, stderr)
	}
	switch args[0] {
	case completeCmd: // the shell completion scripts' helper (completion.go)
		for _, c := range complete(args[1:]) {
			fmt.Fprintln(stdout, c)
		}
		return exitClean
	case "scenarios":
		for _, n := range scenarios.Builtins() {
			st, err := setup.Load(n, nil)
			if err != nil {
				fmt.Fprintf(stderr, "statesim: %v\n", err)
				return exitInternal
			}
			fmt.Fprintf(stdout, "%-28s %s\n", n, st.Scenario.Description)
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

// flagExit is the exit status of a flag parsing error: 0 for --help.
func flagExit(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitClean
	}
	return exitBadInput
}

// parseInterleaved lets flags follow positional arguments
// ("run imposter --json"), as users type them. Its usage message (on
// -h or a bad flag) is the command's summary, flags and exit statuses.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	name, _, _ := strings.Cut(fs.Name(), " ")
	fs.Usage = func() {
		w := fs.Output()
		if c, ok := commands[name]; ok {
			fmt.Fprintf(w, "usage: statesim %s\n\nflags:\n", c.summary)
		}
		fs.PrintDefaults()
		fmt.Fprint(w, "\n", exitStatusHelp)
	}
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
