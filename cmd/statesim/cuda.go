//go:build cuda

package main

import (
	"flag"
	"fmt"
	"io"
	"time"

	_ "statesim/backend/cuda" // backend kind "cuda"
	"statesim/gpuconfirm"
)

// The cuda binary adds the backend (it joins the registry from its own
// package) and the gpu-confirm command; the device and the experiments
// live in backend/cuda and gpuconfirm, so this file holds no state.
func init() {
	commands["gpu-confirm"] = command{
		summary: "gpu-confirm [--out DIR] [--bugb-tokens N]\n      on a GPU machine: GPU/mock parity, bug A and bug B on real kernels; writes gpu-confirmation.{md,json}",
		run:     cmdGPUConfirm,
	}
}

func cmdGPUConfirm(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gpu-confirm", flag.ContinueOnError)
	fs.SetOutput(stderr)
	outDir := fs.String("out", ".", "directory for gpu-confirmation.md and gpu-confirmation.json")
	tokens := fs.Int("bugb-tokens", 64, "prompt tokens of the bug-B prefill")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "statesim: gpu-confirm: takes no arguments, got %q\n", pos)
		return exitBadInput
	}
	if *tokens < 1 {
		fmt.Fprintf(stderr, "statesim: gpu-confirm: --bugb-tokens: must be >= 1, got %d\n", *tokens)
		return exitBadInput
	}
	c, err := gpuconfirm.Confirm(gpuconfirm.Options{BugBTokens: *tokens, Log: stdout})
	if err != nil {
		fmt.Fprintf(stderr, "statesim: gpu-confirm: %v\n", err)
		return exitInternal
	}
	if err := gpuconfirm.Write(*outDir, c); err != nil {
		fmt.Fprintf(stderr, "statesim: gpu-confirm: %v\n", err)
		return exitInternal
	}
	verdict := "PASS"
	if !c.Pass {
		verdict = "FAIL"
	}
	fmt.Fprintf(stdout, "overall: %s (%s)\n", verdict, c.Elapsed.Round(time.Second))
	if !c.Pass {
		return exitViolations
	}
	return exitClean
}
