package main

import (
	"flag"
	"fmt"
	"io"

	"statesim/prop"
)

// cmdCheckMerge joins the summaries of a sharded check campaign into one
// verdict per property: exit 0 clean, 1 found, 2 when a shard is missing,
// given twice or searched with other flags.
func cmdCheckMerge(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("check merge", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dirs, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(dirs) == 0 {
		fmt.Fprintln(stderr, "statesim check merge: want one or more check --out directories (a shard's seed-S, or the campaign's)")
		return exitBadInput
	}
	m, err := prop.MergeSummaries(dirs)
	if err != nil {
		fmt.Fprintf(stderr, "statesim check merge: %v\n", err)
		return exitBadInput
	}
	c := m.Campaign
	fmt.Fprintf(stdout, "statesim check merge: %d shards, seeds %d..%d, %d trials per property each\n",
		c.Shards, c.BaseSeed, c.BaseSeed+int64(c.Shards)-1, c.Trials)
	for _, v := range m.Properties {
		skipped := ""
		if v.Skipped > 0 {
			skipped = fmt.Sprintf("; skipped in %d of %d shards: %s", v.Skipped, c.Shards, v.Detail)
		}
		switch {
		case len(v.Failures) > 0:
			fmt.Fprintf(stdout, "  %-26s FAIL in %d of %d shards (%d scenarios%s)\n", v.Property, len(v.Failures), c.Shards, v.Scenarios, skipped)
			for _, f := range v.Failures {
				fmt.Fprintf(stdout, "      seed %d, scenario %d, %d shrinks: %s\n          %s\n", f.Seed, f.Scenario, f.Shrinks, f.File, f.Detail)
			}
		case v.Skipped == c.Shards:
			fmt.Fprintf(stdout, "  %-26s skipped: %s\n", v.Property, v.Detail)
		default:
			fmt.Fprintf(stdout, "  %-26s ok (%d scenarios%s)\n", v.Property, v.Scenarios, skipped)
		}
	}
	if n := m.Found(); n > 0 {
		fmt.Fprintf(stdout, "%d of %d properties FAIL\n", n, len(m.Properties))
		return exitViolations
	}
	return exitClean
}
