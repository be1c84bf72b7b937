package vllmargs

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"statesim/sched"
	"strconv"
	"strings"
)

// Setting is one modelled flag's effect: the scenario key and its value
// (int, float64, bool or string; a Speculative setting sets two keys).
type Setting struct {
	Flag   string `json:"flag"`
	Key    string `json:"key"`
	Value  any    `json:"value"`
	Origin string `json:"origin"`
}

// Ignored is an argument statesim does not model, and why.
type Ignored struct {
	Flag   string `json:"flag"`
	Value  string `json:"value,omitempty"`
	Why    string `json:"why"`
	Origin string `json:"origin"`
}

// Command is a `vllm serve` command line read into statesim's terms.
type Command struct {
	// Model is the served model: the positional argument, or --model.
	Model string `json:"model"`
	// Settings in the order they apply (a later one for the same key wins).
	Settings []Setting `json:"settings"`
	Ignored  []Ignored `json:"ignored"`
	// Version is a --version VERSION found among the arguments: the vLLM
	// release to audit (vllm serve itself has no such flag).
	Version string `json:"version,omitempty"`
	// Config is the --config file read, if any.
	Config string `json:"config,omitempty"`
	// syncSpec: the speculative method is one vLLM turns async scheduling
	// off for by default (CPU ngram).
	syncSpec bool
}

// Error is a bad argument: the flag, where it came from and what is wrong.
type Error struct {
	Flag, Origin, Msg string
}

func (e *Error) Error() string {
	if e.Flag == "" {
		return e.Origin + ": " + e.Msg
	}
	return fmt.Sprintf("%s: %s: %s", e.Origin, e.Flag, e.Msg)
}

// ReadFile reads a --config file; Parse's caller supplies it (the command
// bounds the size and says which file).
type ReadFile func(path string) ([]byte, error)

// arg is one argument and where it came from.
type arg struct {
	s, origin string
}

const cli = "command line"

// Parse reads args: optionally "vllm" and "serve", then vLLM's
// arguments. readFile reads --config FILE (nil: --config is refused).
func Parse(args []string, readFile ReadFile) (*Command, error) {
	if len(args) > 0 && (args[0] == "vllm" || strings.HasSuffix(args[0], "/vllm")) {
		args = args[1:]
	}
	if len(args) > 0 && args[0] == "serve" {
		args = args[1:]
	}
	c := &Command{}
	in := make([]arg, len(args))
	for i, a := range args {
		in[i] = arg{a, cli}
	}
	in, err := c.pullConfig(in, readFile)
	if err != nil {
		return nil, err
	}
	dotted := map[string]map[string]any{} // --speculative-config.method mtp
	dottedOrigin := map[string]string{}
	for i := 0; i < len(in); i++ {
		a := in[i]
		s := a.s
		if !strings.HasPrefix(s, "-") || isNumber(s) {
			if c.Model != "" {
				return nil, &Error{Origin: a.origin, Msg: fmt.Sprintf("unexpected argument %q: the model is already %q (vllm serve takes one positional argument)", s, c.Model)}
			}
			c.Model = s
			continue
		}
		name, val, hasVal := strings.Cut(s, "=")
		if strings.HasPrefix(name, "--") {
			// FlexibleArgumentParser: "_" → "-" up to the first ".".
			head, rest, dot := strings.Cut(name, ".")
			name = strings.ReplaceAll(head, "_", "-")
			if dot {
				name += "." + rest
			}
		}
		next := func() (string, error) {
			if hasVal {
				return val, nil
			}
			if i+1 >= len(in) {
				return "", &Error{Flag: name, Origin: a.origin, Msg: "expected a value"}
			}
			i++
			return in[i].s, nil
		}
		switch {
		case name == "--version":
			v, err := next()
			if err != nil {
				return nil, err
			}
			c.Version = v
			continue
		case name == "--model":
			v, err := next()
			if err != nil {
				return nil, err
			}
			c.Model = v
			continue
		case name == "--config":
			return nil, &Error{Flag: name, Origin: a.origin, Msg: "more than one config file (vLLM accepts one)"}
		case name == "-O":
			// -O JSON was --compilation-config's short form (arg_utils @
			// 99d7eb5d); -O <0-3> is --optimization-level now.
			if !hasVal && i+1 < len(in) && strings.HasPrefix(strings.TrimSpace(in[i+1].s), "{") {
				name = "--compilation-config"
			} else {
				v, err := next()
				if err != nil {
					return nil, err
				}
				c.ignore("--optimization-level", v, optLevelWhy, a.origin)
				continue
			}
		case strings.HasPrefix(name, "-O") && !strings.HasPrefix(name, "--"):
			c.ignore("--optimization-level", strings.TrimPrefix(strings.TrimPrefix(name, "-O"), "="), optLevelWhy, a.origin)
			continue
		}
		if base, key, ok := strings.Cut(name, "."); ok && strings.HasPrefix(name, "-") {
			// A dotted JSON key: merged into the flag's JSON, as vLLM does.
			v, err := next()
			if err != nil {
				return nil, err
			}
			if f, ok := lookupShort(base); ok {
				base = "--" + f.name
			}
			m := dotted[base]
			if m == nil {
				m = map[string]any{}
				dotted[base] = m
				dottedOrigin[base] = a.origin
			}
			setNested(m, strings.Split(key, "."), dottedValue(v))
			continue
		}
		f, ok := lookupShort(name)
		if !ok && strings.HasPrefix(name, "--") {
			f, ok = lookupFlag(strings.TrimPrefix(name, "--"))
		}
		if !ok && strings.HasPrefix(name, "--no-") {
			if g, found := lookupFlag(strings.TrimPrefix(name, "--no-")); found && g.kind == kBool {
				if hasVal {
					return nil, &Error{Flag: name, Origin: a.origin, Msg: "takes no value"}
				}
				c.set(g, "--"+g.name, false, a.origin)
				continue
			}
		}
		if !ok {
			// Not modelled: report it, with its value when it takes one.
			// vLLM's other short flags (-q, -pp, -dp, -dcp, -ac, ...) all
			// take a value.
			long := name
			v := ""
			switch {
			case hasVal:
				v = val
			case strings.HasPrefix(long, "--") && takesNoValue(strings.TrimPrefix(long, "--")):
			case i+1 < len(in) && (!strings.HasPrefix(in[i+1].s, "-") || isNumber(in[i+1].s)):
				i++
				v = in[i].s
			}
			c.ignore(long, v, whyIgnored(strings.TrimPrefix(long, "--")), a.origin)
			continue
		}
		long := "--" + f.name
		switch f.kind {
		case kBool:
			if hasVal {
				return nil, &Error{Flag: long, Origin: a.origin, Msg: "takes no value (use " + long + " or --no-" + f.name + ")"}
			}
			c.set(f, long, true, a.origin)
		case kEager:
			if hasVal {
				return nil, &Error{Flag: long, Origin: a.origin, Msg: "takes no value"}
			}
			c.set(f, long, "none", a.origin)
		default:
			v, err := next()
			if err != nil {
				return nil, err
			}
			if err := c.value(f, long, v, a.origin); err != nil {
				return nil, err
			}
		}
	}
	bases := make([]string, 0, len(dotted))
	for b := range dotted {
		bases = append(bases, b)
	}
	sort.Strings(bases)
	for _, b := range bases {
		data, _ := json.Marshal(dotted[b])
		f, ok := lookupFlag(strings.TrimPrefix(b, "--"))
		if !ok || (f.kind != kSpec && f.kind != kCompile && f.kind != kKV) {
			c.ignore(b, string(data), whyIgnored(strings.TrimPrefix(b, "--")), dottedOrigin[b])
			continue
		}
		if err := c.value(f, b, string(data), dottedOrigin[b]); err != nil {
			return nil, err
		}
	}
	if c.Model == "" {
		return nil, &Error{Origin: cli, Msg: "no model: vllm serve takes the model as its first argument (or --model, or model: in --config)"}
	}
	return c, nil
}

func (c *Command) set(f *flag, long string, v any, origin string) {
	c.Settings = append(c.Settings, Setting{Flag: long, Key: f.key, Value: v, Origin: origin})
}

func (c *Command) ignore(flag, v, why, origin string) {
	c.Ignored = append(c.Ignored, Ignored{Flag: flag, Value: v, Why: why, Origin: origin})
}

// value reads a valued flag.
func (c *Command) value(f *flag, long, v, origin string) error {
	bad := func(format string, a ...any) error {
		return &Error{Flag: long, Origin: origin, Msg: fmt.Sprintf(format, a...)}
	}
	switch f.kind {
	case kInt, kHumanInt:
		n, err := parseInt(v, f.kind == kHumanInt)
		if err != nil {
			return bad("%v", err)
		}
		c.set(f, long, n, origin)
	case kFloat:
		x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return bad("want a number, got %q", v)
		}
		c.set(f, long, x, origin)
	case kChoice:
		x := strings.ToLower(strings.TrimSpace(v))
		for _, ch := range f.choices {
			if x == ch {
				c.set(f, long, x, origin)
				return nil
			}
		}
		if f.name == "kv-cache-dtype" {
			c.ignore(long, v, "a KV cache dtype statesim does not size (it models auto, bfloat16, float16, fp8, fp8_e4m3, fp8_e5m2); the KV page keeps the model's dtype", origin)
			return nil
		}
		return bad("%q is not one of %s", v, strings.Join(f.choices, ", "))
	case kDType:
		x := strings.ToLower(strings.TrimSpace(v))
		if x == "auto" {
			return nil // the model's own
		}
		d, ok := dtypes[x]
		if !ok {
			return bad("%q is not one of auto, half, float16, bfloat16, float, float32", v)
		}
		c.set(f, long, d, origin)
	case kSpec:
		return c.spec(long, v, origin)
	case kKV:
		return c.kvTransfer(long, v, origin)
	case kCompile:
		return c.compilation(long, v, origin)
	}
	return nil
}

// kvTransfer reads --kv-transfer-config's JSON: the connector by its
// registry name; only the scheduler's local hit with it is modelled.
func (c *Command) kvTransfer(long, v, origin string) error {
	var m map[string]any
	if err := json.Unmarshal([]byte(v), &m); err != nil || m == nil {
		return &Error{Flag: long, Origin: origin, Msg: fmt.Sprintf("want a JSON object, got %q", v)}
	}
	for _, key := range sortedKeys(m) {
		if key != "kv_connector" {
			raw, _ := json.Marshal(m[key])
			c.ignore(long+"."+key, string(raw), "statesim models only the scheduler's local prefix hit with a connector: its role, transfers and store are not modelled", origin)
		}
	}
	name, ok := m["kv_connector"].(string)
	if _, has := m["kv_connector"]; has && !ok {
		return &Error{Flag: long, Origin: origin, Msg: "kv_connector: want a string"}
	}
	if cn, err := sched.ParseConnector(name); err != nil || cn == sched.ConnectorNone {
		c.ignore(long+".kv_connector", name, "a connector statesim does not model (it models NixlConnector, OffloadingConnector, LMCacheConnectorV1): the run has none", origin)
		return nil
	}
	c.Settings = append(c.Settings, Setting{Flag: long, Key: "engine.kv_transfer_config.kv_connector", Value: name, Origin: origin})
	return nil
}

// spec reads --speculative-config's JSON.
func (c *Command) spec(long, v, origin string) error {
	var m map[string]any
	if err := json.Unmarshal([]byte(v), &m); err != nil || m == nil {
		return &Error{Flag: long, Origin: origin, Msg: fmt.Sprintf("want a JSON object, got %q", v)}
	}
	keys := sortedKeys(m)
	method, _ := m["method"].(string)
	if _, ok := m["method"]; ok && method == "" {
		return &Error{Flag: long, Origin: origin, Msg: "method: want a string"}
	}
	k, hasK := m["num_speculative_tokens"]
	for _, key := range keys {
		if key != "method" && key != "num_speculative_tokens" {
			raw, _ := json.Marshal(m[key])
			c.ignore(long+"."+key, string(raw), "the draft model itself is not modelled: statesim draws acceptance (engine.speculative.acceptance_rate or accepted)", origin)
		}
	}
	switch {
	case method == "":
		c.ignore(long, v, "no method: vLLM detects it from the draft model, which statesim does not read; give \"method\"", origin)
		return nil
	case method == "dflash":
		c.ignore(long+".method", method, "dflash is modelled with its drafter's layers, from the draft model's config.json, which these arguments do not give: speculative decoding stays off here; run the scenario with engine.speculative.method dflash and engine.speculative.draft (num_hidden_layers, num_key_value_heads, head_dim, sliding_window)", origin)
		return nil
	case specMethod(method) == "":
		c.ignore(long+".method", method, "a speculative method statesim does not model (it models the MTP proposers, eagle/eagle3, ngram, and dflash given its drafter's layers): speculative decoding stays off here", origin)
		return nil
	case !hasK:
		c.ignore(long, v, "no num_speculative_tokens: vLLM takes it from the draft model's config, which statesim does not read; give it", origin)
		return nil
	}
	kf, ok := k.(float64)
	if !ok || kf != math.Trunc(kf) || kf < 1 || kf > 1<<20 {
		return &Error{Flag: long, Origin: origin, Msg: fmt.Sprintf("num_speculative_tokens: want a positive integer, got %v", k)}
	}
	// VllmConfig.__post_init__ (config/vllm.py @ 000fc94b) leaves async
	// scheduling on by default only for the EAGLE/MTP, ngram_gpu,
	// draft_model and dspark methods: CPU ngram turns it off.
	c.syncSpec = method == "ngram"
	c.Settings = append(c.Settings,
		Setting{Flag: long, Key: "engine.speculative.method", Value: specMethod(method), Origin: origin},
		Setting{Flag: long, Key: "engine.speculative.num_speculative_tokens", Value: int(kf), Origin: origin})
	return nil
}

// compilation reads --compilation-config's JSON: cudagraph_mode is
// modelled, every other key is reported.
func (c *Command) compilation(long, v, origin string) error {
	var m map[string]any
	if err := json.Unmarshal([]byte(v), &m); err != nil || m == nil {
		return &Error{Flag: long, Origin: origin, Msg: fmt.Sprintf("want a JSON object, got %q", v)}
	}
	for _, key := range sortedKeys(m) {
		raw, _ := json.Marshal(m[key])
		if key == "mode" || key == "level" {
			c.ignore(long+"."+key, string(raw), "the compilation mode's effect is not derived (without vLLM's compile a piecewise cudagraph_mode runs as NONE, config/vllm.py @ 000fc94b): state cudagraph_mode", origin)
			continue
		}
		if key != "cudagraph_mode" {
			c.ignore(long+"."+key, string(raw), "compilation detail: no effect on which rows the scheduler and the kernels see", origin)
			continue
		}
		s, ok := m[key].(string)
		if !ok {
			return &Error{Flag: long, Origin: origin, Msg: fmt.Sprintf("cudagraph_mode: want a string (NONE, PIECEWISE, FULL, FULL_DECODE_ONLY, FULL_AND_PIECEWISE), got %s", raw)}
		}
		mode, ok := cudagraphModes[strings.ToUpper(s)]
		if !ok {
			if strings.EqualFold(s, "FULL") {
				c.ignore(long+".cudagraph_mode", s, "FULL (full graphs for mixed batches too) is not modelled; statesim models NONE, PIECEWISE, FULL_DECODE_ONLY and FULL_AND_PIECEWISE", origin)
				continue
			}
			return &Error{Flag: long, Origin: origin, Msg: fmt.Sprintf("cudagraph_mode: %q is not one of NONE, PIECEWISE, FULL, FULL_DECODE_ONLY, FULL_AND_PIECEWISE", s)}
		}
		c.Settings = append(c.Settings, Setting{Flag: long, Key: "engine.cudagraph_mode", Value: mode, Origin: origin})
	}
	return nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func setNested(m map[string]any, keys []string, v any) {
	for _, k := range keys[:len(keys)-1] {
		sub, ok := m[k].(map[string]any)
		if !ok {
			sub = map[string]any{}
			m[k] = sub
		}
		m = sub
	}
	m[keys[len(keys)-1]] = v
}

// dottedValue is a dotted key's value: JSON if it parses, else the string
// (FlexibleArgumentParser.parse_args).
func dottedValue(s string) any {
	var v any
	if json.Unmarshal([]byte(s), &v) == nil {
		return v
	}
	return s
}

var humanInt = regexp.MustCompile(`^(\d+(?:\.\d+)?)([kKmMgG])$`)

// parseInt reads an integer; human also takes vLLM's human_readable_int
// (arg_utils.py): 1k = 1,000, 1K = 1,024, 25.6k = 25,600, no decimals
// with a binary suffix.
func parseInt(s string, human bool) (int, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.Atoi(s); err == nil {
		return n, nil
	}
	if human {
		if m := humanInt.FindStringSubmatch(s); m != nil {
			mult := map[string]float64{"k": 1e3, "m": 1e6, "g": 1e9, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m[2]]
			if strings.Contains(m[1], ".") && strings.ToUpper(m[2]) == m[2] {
				return 0, fmt.Errorf("%q: no decimals with a binary multiplier (K, M, G), as vLLM's human_readable_int", s)
			}
			x, err := strconv.ParseFloat(m[1], 64)
			if err == nil && x*mult < 1<<53 {
				return int(x * mult), nil
			}
		}
		return 0, fmt.Errorf("want an integer (or 8k, 32K), got %q", s)
	}
	return 0, fmt.Errorf("want an integer, got %q", s)
}

func isNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// optLevelWhy: the optimization level also picks defaults statesim does
// not derive, among them whether CUDA graphs run (config/vllm.py @
// 000fc94b turns a piecewise cudagraph_mode off without vLLM's compile).
const optLevelWhy = "the optimization level's defaults are not derived (at a low level vLLM may run without CUDA graphs): state the mode with --compilation-config.cudagraph_mode or --enforce-eager"

// whyIgnored says why an unmodelled flag is ignored.
func whyIgnored(name string) string {
	switch name {
	case "port", "host", "served-model-name", "api-key", "uvicorn-log-level", "chat-template",
		"tool-call-parser", "reasoning-parser", "enable-auto-tool-choice", "disable-log-stats",
		"disable-log-requests", "enable-log-requests", "disable-uvicorn-access-log":
		return "the API server and logging: not the engine"
	case "pipeline-parallel-size", "data-parallel-size", "enable-expert-parallel", "decode-context-parallel-size", "-pp", "-dp", "-dcp":
		return "parallelism statesim does not model (it models tensor_parallel_size): one engine's scheduler and cache are simulated"
	case "trust-remote-code", "revision", "tokenizer", "download-dir", "load-format", "quantization", "hf-token":
		return "model loading: statesim reads the config.json only"
	case "swap-space", "cpu-offload-gb", "kv-offloading-size", "kv-offloading-backend":
		return "offloading is not modelled"
	case "enable-lora", "max-loras", "max-lora-rank":
		return "LoRA is not modelled"
	case "seed":
		return "the sampling seed: statesim's runs are seeded by the scenario"
	}
	return "not modelled by statesim"
}
