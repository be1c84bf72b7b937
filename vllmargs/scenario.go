package vllmargs

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"statesim/model"
	"statesim/scenarios"
	"statesim/sched"
	"statesim/statecache"
)

// Options shape the scenario a command becomes.
type Options struct {
	// Version is the vLLM release (a vllm_version, or a release number
	// such as 0.22.1 or v0.22.1); empty: the command's --version, else the
	// newest modelled.
	Version string
	// Device names the accelerator (scenarios/devices.go); empty: the
	// scenario default.
	Device string
	// Trace is a request log the scenario replays (a trace workload);
	// empty: one placeholder request.
	Trace string
}

// Translation is a command as a scenario.
type Translation struct {
	// YAML is the scenario document: only what the command line set, the
	// defaults vLLM applies where statesim's differ, the model, version
	// and workload. scenarios.Parse reads it.
	YAML []byte
	// Version is the vllm_version used.
	Version string
	// ModelSource says which config the model resolved to.
	ModelSource string
	// HFConfig is model.hf_config (empty for a preset).
	HFConfig string
	// Defaults are vLLM's defaults the document sets because statesim's
	// own differ (cudagraph_mode, async_scheduling).
	Defaults []Setting
	// Keys maps each scenario key the command set to the flag that set
	// it last, so an error on the key can name the flag.
	Keys map[string]string
}

var releaseNum = regexp.MustCompile(`^v?(\d+)\.(\d+)(?:\.\d+.*)?$`)

// NormalizeVersion reads a release as statesim names it: "0.22.1",
// "v0.22.1" and "v0.22" are all v0.22; v0, fixed and the aliases pass.
func NormalizeVersion(s string) (string, error) {
	if _, err := sched.ParseVersion(s); err == nil {
		return s, nil
	}
	if m := releaseNum.FindStringSubmatch(strings.TrimSpace(s)); m != nil {
		v := "v" + m[1] + "." + m[2]
		if _, err := sched.ParseVersion(v); err == nil {
			return v, nil
		}
	}
	_, err := sched.ParseVersion(s)
	return "", err
}

// newest is the newest modelled release (the fixed alias's).
func newest() string {
	names := sched.VersionNames()
	v, _ := sched.ParseVersion("fixed")
	for _, n := range names {
		if w, _ := sched.ParseVersion(n); w == v && n != "fixed" {
			return n
		}
	}
	return "fixed"
}

// resolveModel finds the config a served model names: a preset, a
// built-in config's name, a config.json or a model directory holding one,
// or a Hugging Face id (scenarios.ResolveModelID).
func resolveModel(m string) (key, value, source string, err error) {
	if _, err := model.Preset(m); err == nil {
		return "preset", m, "the preset " + m, nil
	}
	if slices.Contains(scenarios.BuiltinModels(), m) {
		return "hf_config", m, "the built-in config " + m, nil
	}
	if strings.HasSuffix(m, ".json") {
		return "hf_config", m, m, nil
	}
	if st, err := os.Stat(m); err == nil && st.IsDir() {
		p := filepath.Join(m, "config.json")
		if _, err := os.Stat(p); err != nil {
			return "", "", "", fmt.Errorf("model directory %s has no config.json", m)
		}
		return "hf_config", p, p + " (a local model directory)", nil
	}
	src, err := scenarios.ResolveModelID(m)
	if err != nil {
		return "", "", "", err
	}
	return "hf_config", src.HFConfig(), src.String(), nil
}

// Scenario writes the command as a scenario document.
func (c *Command) Scenario(opt Options) (*Translation, error) {
	v := opt.Version
	if v == "" {
		v = c.Version
	}
	if v == "" {
		v = newest()
	}
	version, err := NormalizeVersion(v)
	if err != nil {
		return nil, &Error{Flag: "--version", Origin: cli, Msg: err.Error()}
	}
	key, value, source, err := resolveModel(c.Model)
	if err != nil {
		return nil, &Error{Flag: "model", Origin: cli, Msg: err.Error()}
	}
	t := &Translation{Version: version, ModelSource: source, Keys: map[string]string{}}
	if key == "hf_config" {
		t.HFConfig = value
	}
	modelNode := mapping(key, value)
	engine := mapping("vllm_version", version)
	spec := &yaml.Node{Kind: yaml.MappingNode}
	kv := &yaml.Node{Kind: yaml.MappingNode}
	var order []string
	last := map[string]any{}
	for _, s := range c.Settings {
		if _, ok := last[s.Key]; !ok {
			order = append(order, s.Key)
		}
		last[s.Key] = s.Value
		t.Keys[s.Key] = s.Flag
	}
	// vLLM's defaults where statesim's differ (docs/model.md): CUDA
	// graphs full_and_piecewise (statesim: none, eager) and async
	// scheduling on from v0.14 (statesim: off), unless the speculative
	// method turns it off (config/vllm.py @ 000fc94b).
	if _, ok := last["engine.cudagraph_mode"]; !ok && version != "v0" {
		t.Defaults = append(t.Defaults, Setting{Flag: "--compilation-config.cudagraph_mode", Key: "engine.cudagraph_mode", Value: "full_and_piecewise", Origin: "vLLM's default"})
	}
	if _, ok := last["engine.async_scheduling"]; !ok && asyncByDefault(version) {
		if c.syncSpec {
			t.Defaults = append(t.Defaults, Setting{Flag: "--no-async-scheduling", Key: "engine.async_scheduling", Value: false, Origin: "vLLM's default with ngram speculative decoding"})
		} else {
			t.Defaults = append(t.Defaults, Setting{Flag: "--async-scheduling", Key: "engine.async_scheduling", Value: true, Origin: "vLLM's default from v0.14"})
		}
	}
	for _, d := range t.Defaults {
		order = append(order, d.Key)
		last[d.Key] = d.Value
	}
	for _, k := range order {
		val := scalar(last[k])
		switch {
		case strings.HasPrefix(k, "engine.speculative."):
			spec.Content = append(spec.Content, str(strings.TrimPrefix(k, "engine.speculative.")), val)
		case strings.HasPrefix(k, "engine.kv_transfer_config."):
			kv.Content = append(kv.Content, str(strings.TrimPrefix(k, "engine.kv_transfer_config.")), val)
		case strings.HasPrefix(k, "engine."):
			engine.Content = append(engine.Content, str(strings.TrimPrefix(k, "engine.")), val)
		case strings.HasPrefix(k, "model."):
			modelNode.Content = append(modelNode.Content, str(strings.TrimPrefix(k, "model.")), val)
		}
	}
	if len(spec.Content) > 0 {
		engine.Content = append(engine.Content, str("speculative"), spec)
	}
	if len(kv.Content) > 0 {
		engine.Content = append(engine.Content, str("kv_transfer_config"), kv)
	}
	doc := mapping("name", "vllm-serve")
	doc.Content = append(doc.Content, str("description"), str(describe(c, version)))
	doc.Content = append(doc.Content, str("model"), modelNode, str("engine"), engine)
	if opt.Device != "" {
		doc.Content = append(doc.Content, str("device"), mapping("name", opt.Device))
	}
	if opt.Trace != "" {
		w := mapping("kind", "trace")
		w.Content = append(w.Content, str("path"), str(opt.Trace),
			str("prompt_len"), mapping("dist", "trace"), str("output_len"), mapping("dist", "trace"))
		doc.Content = append(doc.Content, str("workload"), w)
	} else {
		// A placeholder: the start-up decisions need no requests.
		w := mapping("kind", "poisson")
		w.Content = append(w.Content, str("rate"), scalar(1), str("count"), scalar(1))
		doc.Content = append(doc.Content, str("workload"), w)
	}
	var b strings.Builder
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	t.YAML = []byte(b.String())
	return t, nil
}

// asyncByDefault: vLLM turns async scheduling on by default from v0.14
// (docs/model.md, "Async scheduling").
func asyncByDefault(version string) bool {
	r, err := statecache.ParseRelease(version)
	if err != nil {
		v, perr := sched.ParseVersion(version) // an alias: fixed
		if perr != nil || v == sched.V0 {
			return false
		}
		if r, err = statecache.ParseRelease(v.Release().String()); err != nil {
			return false
		}
	}
	return r.Major > 0 || r.Minor >= 14
}

func describe(c *Command, version string) string {
	return fmt.Sprintf("vllm serve %s at vLLM %s (%d settings modelled, %d arguments ignored; written by statesim audit)", c.Model, version, len(c.Settings), len(c.Ignored))
}

func str(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: s, Tag: "!!str"} }

func mapping(k, v string) *yaml.Node {
	return &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{str(k), str(v)}}
}

func scalar(v any) *yaml.Node {
	switch x := v.(type) {
	case int:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(x)}
	case float64:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: strconv.FormatFloat(x, 'g', -1, 64)}
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(x)}
	}
	return str(fmt.Sprint(v))
}

// Args writes the engine settings of sc statesim models back as `vllm
// serve` flags, in ModelledFlags' order: what a reader types to run the
// scenario's engine on vLLM. Parse(Args(sc)) sets the same keys.
func Args(sc *scenarios.Scenario) []string {
	e := &sc.Engine
	var out []string
	add := func(a ...string) { out = append(out, a...) }
	boolFlag := func(name string, on bool) {
		if on {
			add("--" + name)
		} else {
			add("--no-" + name)
		}
	}
	add("--max-num-seqs", strconv.Itoa(e.MaxNumSeqs))
	add("--max-num-batched-tokens", strconv.Itoa(e.MaxNumBatchedTokens))
	add("--max-model-len", strconv.Itoa(e.MaxModelLen))
	add("--block-size", strconv.Itoa(e.BlockSize))
	add("--gpu-memory-utilization", strconv.FormatFloat(e.GPUMemoryUtilization, 'g', -1, 64))
	if e.NumGPUBlocksOverride > 0 {
		add("--num-gpu-blocks-override", strconv.Itoa(e.NumGPUBlocksOverride))
	}
	if e.EnablePrefixCaching != nil {
		boolFlag("enable-prefix-caching", *e.EnablePrefixCaching)
	}
	if e.MambaCacheMode != "" {
		add("--mamba-cache-mode", e.MambaCacheMode)
	}
	if e.MambaBlockSize > 0 {
		add("--mamba-block-size", strconv.Itoa(e.MambaBlockSize))
	}
	if e.PrefixMatchUnit > 0 {
		add("--prefix-match-unit", strconv.Itoa(e.PrefixMatchUnit))
	}
	add("--mamba-cache-dtype", e.MambaCacheDType, "--mamba-ssm-cache-dtype", e.MambaSSMCacheDType, "--kv-cache-dtype", e.KVCacheDType)
	boolFlag("enable-chunked-prefill", e.EnableChunkedPrefill)
	add("--long-prefill-token-threshold", strconv.Itoa(e.LongPrefillTokenThreshold))
	boolFlag("async-scheduling", e.AsyncScheduling)
	add("--scheduling-policy", e.SchedulingPolicy)
	add("-tp", strconv.Itoa(e.TensorParallelSize))
	if sp := e.Speculative; sp.Method != "" {
		js, _ := json.Marshal(map[string]any{"method": sp.Method, "num_speculative_tokens": sp.NumSpeculativeTokens})
		add("--speculative-config", string(js))
	}
	if e.CUDAGraphMode != "" {
		js, _ := json.Marshal(map[string]string{"cudagraph_mode": strings.ToUpper(e.CUDAGraphMode)})
		add("--compilation-config", string(js))
	}
	if d := sc.Model.Shape.DType; d != "" {
		add("--dtype", d)
	}
	if k := e.KVTransferConfig.KVConnector; k != "" {
		js, _ := json.Marshal(map[string]string{"kv_connector": k})
		add("--kv-transfer-config", string(js))
	}
	return out
}
