package main

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strings"

	"statesim/model"
	"statesim/prop"
	"statesim/scenarios"
	"statesim/scenarios/sweeps"
	"statesim/sched"
	"statesim/sweep"
	"statesim/vllmargs"
)

func init() {
	commands["completion"] = command{
		summary: "completion bash|zsh|fish\n      a shell completion script for commands, flags, built-in scenarios and sweeps, models, releases and patches\n      (bash: source <(statesim completion bash); zsh: source <(statesim completion zsh); fish: statesim completion fish | source)",
		run:     cmdCompletion,
	}
}

// completeCmd is the hidden command the scripts call: it prints one
// candidate per line for the last word of the command line so far.
const completeCmd = "__complete"

var completionScripts = map[string]string{
	"bash": `# statesim bash completion: source <(statesim completion bash)
_statesim() {
  local IFS=$'\n'
  COMPREPLY=($(statesim ` + completeCmd + ` "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
}
complete -o default -F _statesim statesim
`,
	"zsh": `#compdef statesim
# statesim zsh completion: source <(statesim completion zsh) (after compinit)
_statesim() {
  local -a c
  c=("${(@f)$(statesim ` + completeCmd + ` "${(@)words[2,CURRENT]}" 2>/dev/null)}")
  if (( ${#c} )) && [[ -n "${c[1]}" ]]; then
    compadd -a c
  else
    _files
  fi
}
compdef _statesim statesim
`,
	"fish": `# statesim fish completion: statesim completion fish | source
function __statesim_complete
    set -l tokens (commandline -opc) (commandline -ct)
    statesim ` + completeCmd + ` $tokens[2..-1] 2>/dev/null
end
complete -c statesim -a '(__statesim_complete)'
`,
}

func cmdCompletion(args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprintf(stdout, "usage: statesim %s\n\n%s", commands["completion"].summary, exitStatusHelp)
		return exitClean
	}
	if len(args) != 1 || completionScripts[args[0]] == "" {
		fmt.Fprintf(stderr, "statesim completion: want bash, zsh or fish\n")
		return exitBadInput
	}
	if _, err := io.WriteString(stdout, completionScripts[args[0]]); err != nil {
		return exitInternal
	}
	return exitClean
}

// complete is the candidates for the last of words (the arguments after
// "statesim"; the last may be empty), filtered by its prefix.
func complete(words []string) []string {
	if len(words) == 0 {
		words = []string{""}
	}
	cur := words[len(words)-1]
	var out []string
	if len(words) == 1 {
		for n := range commands {
			out = append(out, n)
		}
		out = append(out, "scenarios", "help")
		return filterPrefix(out, cur)
	}
	cmd := words[0]
	if cmd == "audit" {
		if i := slices.Index(words, "--"); i >= 0 && i < len(words)-1 {
			return filterPrefix(completeVLLM(words[i+1:]), cur)
		}
	}
	prev := words[len(words)-2]
	if vals, ok := flagValues(cmd, prev); ok {
		return filterPrefix(vals, cur)
	}
	if strings.HasPrefix(cur, "-") {
		return filterPrefix(commandFlags(cmd), cur)
	}
	switch cmd {
	case "run", "explain", "plot":
		out = scenarios.Builtins()
	case "sweep":
		out = append(append([]string{"merge", "list"}, sweeps.Names()...), scenarios.Builtins()...)
	case "model":
		out = modelNames(false)
	case "completion":
		out = []string{"bash", "fish", "zsh"}
	case "schema":
		out = []string{"scenario", "sweep"}
	case "audit":
		out = []string{"--"}
	case "check":
		out = []string{"merge"}
	}
	return filterPrefix(out, cur)
}

// completeVLLM completes the vllm serve command line after audit's "--".
func completeVLLM(words []string) []string {
	switch {
	case len(words) == 1:
		return []string{"vllm"}
	case len(words) == 2 && words[0] == "vllm":
		return []string{"serve"}
	}
	prev := words[len(words)-2]
	switch prev {
	case "serve", "--model":
		return modelNames(true)
	case "--version":
		return sched.VersionNames()
	case "--mamba-cache-mode":
		return []string{"all", "align", "none"}
	case "--scheduling-policy":
		return []string{"fcfs", "priority"}
	case "--mamba-cache-dtype", "--mamba-ssm-cache-dtype":
		return []string{"auto", "bfloat16", "float16", "float32"}
	case "--kv-cache-dtype":
		return []string{"auto", "bfloat16", "float16", "fp8", "fp8_e4m3", "fp8_e5m2"}
	case "--speculative-config":
		return []string{`{"method":"mtp","num_speculative_tokens":1}`}
	case "--compilation-config":
		return []string{`{"cudagraph_mode":"FULL_AND_PIECEWISE"}`, `{"cudagraph_mode":"PIECEWISE"}`, `{"cudagraph_mode":"NONE"}`}
	}
	return append(vllmargs.ModelledFlags(), "--no-enable-prefix-caching", "--no-enable-chunked-prefill", "--no-async-scheduling", "--config", "--version", "-tp")
}

// modelNames: presets, built-in configs and, with ids, their Hugging Face ids.
func modelNames(ids bool) []string {
	out := append(model.AllPresetNames(), scenarios.BuiltinModels()...)
	if ids {
		out = append(out, scenarios.BuiltinModelIDs()...)
	}
	return out
}

// flagValues are the values a flag of cmd takes, when they are a known set.
func flagValues(cmd, flag string) ([]string, bool) {
	name := strings.TrimLeft(flag, "-")
	switch name {
	case "version":
		v := sched.VersionNames()
		if cmd == "check" {
			v = append(v, "all")
		}
		return v, true
	case "model":
		if cmd == "check" {
			return append(modelNames(false), "all"), true
		}
	case "patches":
		var out []string
		for _, p := range sched.PatchNames() {
			out = append(out, "+"+p, "-"+p)
		}
		return out, true
	case "spec":
		return []string{"off", "mtp", "eagle", "ngram"}, true
	case "cudagraph":
		return []string{"none", "piecewise", "full_decode_only", "full_and_piecewise"}, true
	case "model-runner":
		return []string{"v1", "v2", "default"}, true
	case "backend":
		return []string{"symbolic", "mock", "cuda"}, true
	case "prefix-caching":
		return []string{"on", "align", "all", "off"}, true
	case "async":
		return []string{"on", "off"}, true
	case "property":
		var out []string
		for _, p := range prop.All() {
			out = append(out, p.Name)
		}
		return out, true
	case "metric":
		var out []string
		for _, m := range sweep.Metrics {
			out = append(out, m.Name)
		}
		return out, true
	case "device":
		return []string{"A10G", "L4", "A100-40GB", "L40S", "A100-80GB", "H100-80GB", "H100-94GB", "H200", "B200"}, true
	case "set", "vary", "seed", "trials", "bits", "spec-k", "prompt-len", "seeds", "shard", "request", "rate-scale", "max-shrinks", "shared", "hash-block", "prefix-match-unit", "workers":
		return nil, true // a value to type: nothing to offer
	}
	return nil, false
}

var helpFlag = regexp.MustCompile(`(?m)^  -([a-zA-Z0-9-]+)`)

// commandFlags reads cmd's flags from its --help (flag.PrintDefaults):
// the flag sets live in each command's run, so the help is their list.
func commandFlags(cmd string) []string {
	c, ok := commands[cmd]
	if !ok || cmd == "completion" {
		return nil
	}
	var out, errs bytes.Buffer
	c.run([]string{"--help"}, &out, &errs)
	var flags []string
	for _, m := range helpFlag.FindAllStringSubmatch(out.String()+errs.String(), -1) {
		flags = append(flags, "--"+m[1])
	}
	sort.Strings(flags)
	return slices.Compact(flags)
}

func filterPrefix(xs []string, prefix string) []string {
	var out []string
	for _, x := range xs {
		if strings.HasPrefix(x, prefix) {
			out = append(out, x)
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}
