// Package vllmargs reads a `vllm serve` command line, and vLLM's --config
// YAML, into the scenario keys statesim models, with vLLM's own flag
// names and spellings: long and short forms (-tp), "--flag value" and
// "--flag=value", --no-X for booleans, underscores for dashes, JSON-valued
// flags (--speculative-config, --compilation-config / -cc / -O JSON) and
// their dotted forms (--speculative-config.method mtp), vLLM's
// human-readable integers (8k, 32K), and --config FILE, whose entries go
// before the command line's so that the command line wins, as in vLLM.
//
// Every argument ends up in exactly one of two lists: a Setting (a flag
// statesim models, with the scenario key it sets) or an Ignored (a flag,
// or a key inside a JSON flag, that statesim does not model, with why).
// Nothing is dropped silently; callers refuse Ignored under --strict.
//
// The flag facts come from vLLM's code: the argument names and short
// forms from vllm/engine/arg_utils.py (EngineArgs.add_cli_args) @
// 99d7eb5d; the argument rewriting (--model moved first, --config
// inserted after it, "_" to "-", -O<n> as --optimization-level, dotted
// JSON keys) from vllm/utils/argparse_utils.py (FlexibleArgumentParser)
// @ 00da11e3; the value sets from vllm/config/cache.py @ 002f10e0
// (MambaCacheMode, MambaDType, CacheDType), vllm/config/compilation.py @
// 002284db (CUDAGraphMode) and vllm/config/speculative.py @ 002e77c1
// (SpeculativeMethod, MTPModelTypes). --mamba-cache-mode and -cc are
// newer than that arg_utils.py; docs/audit.md says where they were read,
// and lists every flag.
//
// The package only translates: it runs nothing and never reads the
// network. Model ids resolve through scenarios.ResolveModelID.
package vllmargs
