package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"statesim/schema"
)

func init() {
	commands["schema"] = command{
		summary: "schema [scenario|sweep] [--out DIR]\n      the JSON Schema of the scenario (default) or sweep format, for YAML editors; --out writes both into DIR",
		run:     cmdSchema,
	}
}

func cmdSchema(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("schema", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "write scenario.schema.json and sweep.schema.json into this directory")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if *out != "" {
		if len(pos) > 0 {
			fmt.Fprintf(stderr, "statesim schema: --out writes both schemas; no FORMAT with it\n")
			return exitBadInput
		}
		if err := os.MkdirAll(*out, 0o755); err != nil {
			fmt.Fprintf(stderr, "statesim schema: --out %s: %v\n", *out, err)
			return exitBadInput
		}
		for name, o := range map[string]schema.Object{"scenario.schema.json": schema.Scenario(), "sweep.schema.json": schema.Sweep()} {
			if err := os.WriteFile(filepath.Join(*out, name), schema.JSON(o), 0o644); err != nil {
				fmt.Fprintf(stderr, "statesim schema: --out %s: %v\n", *out, err)
				return exitBadInput
			}
		}
		return exitClean
	}
	o := schema.Scenario()
	switch {
	case len(pos) == 0 || len(pos) == 1 && pos[0] == "scenario":
	case len(pos) == 1 && pos[0] == "sweep":
		o = schema.Sweep()
	default:
		fmt.Fprintf(stderr, "statesim schema: want scenario or sweep, got %v\n", pos)
		return exitBadInput
	}
	if _, err := stdout.Write(schema.JSON(o)); err != nil {
		return exitInternal
	}
	return exitClean
}
