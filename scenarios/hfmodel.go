package scenarios

import (
	"embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"

	"statesim/internal/infile"
	"statesim/model"
)

// hfOverridable are the model keys a scenario may set next to hf_config:
// a name, measured weights, and vLLM's --dtype. Every other shape field
// comes from the config, so setting it there would silently disagree.
var hfOverridable = map[string]bool{"hf_config": true, "name": true, "weights_gib": true, "dtype": true}

// loadHFConfig derives the model shape from model.hf_config, when the
// scenario names one. A relative path is tried from the working directory,
// then from the scenario file's directory.
func loadHFConfig(doc *yaml.Node, sc *Scenario, name string, sets map[string]string) error {
	n := lookup(doc, "model", "hf_config")
	if n == nil {
		return nil
	}
	if n.Kind != yaml.ScalarNode || n.Value == "" {
		return locate(name, n, "model.hf_config", "want the path of a config.json", sets)
	}
	if p := lookup(doc, "model", "preset"); p != nil {
		return locate(name, p, "model.preset", "cannot be combined with model.hf_config: the config gives the whole shape", sets)
	}
	m := lookup(doc, "model")
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k := m.Content[i]; !hfOverridable[k.Value] {
			return locate(name, k, "model."+k.Value, "cannot be combined with model.hf_config (edit the config instead; only name, weights_gib and dtype may be set beside it)", sets)
		}
	}
	shape, err := ReadHFConfig(n.Value, filepath.Dir(name))
	if err != nil {
		var ce *model.ConfigError
		if errors.As(err, &ce) {
			return &InputError{File: ce.File, Line: ce.Line, Path: ce.Field, Msg: ce.Msg}
		}
		var tl *infile.TooLargeError
		if errors.As(err, &tl) { // the config's fault, not the line naming it
			return &InputError{File: tl.Path, Msg: fmt.Sprintf("larger than %s, the most a %s may hold", infile.Size(tl.Max), tl.Kind)}
		}
		return locate(name, n, "model.hf_config", err.Error(), sets)
	}
	sc.Model.Shape = shape
	return nil
}

// The public models' configs ship in the binary (scenarios/models), so a
// built-in scenario or an installed binary can name one without a file.
//
//go:embed models/*.json
var builtinModels embed.FS

// BuiltinModels lists the embedded configs by name (file name without .json).
func BuiltinModels() []string {
	ents, _ := builtinModels.ReadDir("models")
	var out []string
	for _, e := range ents {
		out = append(out, strings.TrimSuffix(e.Name(), ".json"))
	}
	return out
}

// isConfigPath tells a file path from a built-in config's name, by the
// rule scenario names follow: a path has a "/" or ends in ".json".
func isConfigPath(s string) bool { return strings.Contains(s, "/") || strings.HasSuffix(s, ".json") }

// ReadHFConfig reads and derives a config.json: a built-in config's name
// (see BuiltinModels), or a path as given, or, when relative and absent,
// relative to dir.
func ReadHFConfig(path, dir string) (model.Shape, error) {
	if !isConfigPath(path) {
		data, err := builtinModels.ReadFile("models/" + path + ".json")
		if err != nil {
			return model.Shape{}, fmt.Errorf("unknown built-in model config %q (built-ins: %s; a file path needs a / or a .json suffix)", path, strings.Join(BuiltinModels(), ", "))
		}
		return model.FromHFConfig(data, "scenarios/models/"+path+".json")
	}
	data, err := readConfigFile(path)
	if errors.Is(err, os.ErrNotExist) && !filepath.IsAbs(path) && dir != "" && dir != "." {
		if d, e := readConfigFile(filepath.Join(dir, path)); !errors.Is(e, os.ErrNotExist) {
			data, err, path = d, e, filepath.Join(dir, path)
		}
	}
	if errors.Is(err, os.ErrNotExist) && IsModelID(path) {
		return byID(path) // hf_config: ORG/NAME (hfhub.go)
	}
	if err != nil {
		return model.Shape{}, err
	}
	return model.FromHFConfig(data, path)
}

// maxConfigBytes bounds a config.json (real ones are a few KiB; a
// variable so tests can lower it).
var maxConfigBytes int64 = infile.MaxConfigBytes

// readConfigFile reads a config.json of at most maxConfigBytes, so a
// path like /dev/zero or a FIFO is an error, not a hang.
func readConfigFile(path string) ([]byte, error) {
	return infile.ReadFile(path, "config.json", maxConfigBytes)
}

// validateModelSource rejects an hf_config the shape was not derived from
// (a scenario built in code, or edited after Parse), and sets the shape's
// cache arguments from the engine section: the layout reads them.
func (s *Scenario) validateModelSource() error {
	e := &s.Engine
	s.Model.Shape.Cache = model.CacheConfig{
		TensorParallelSize: e.TensorParallelSize, MambaCacheDType: e.MambaCacheDType,
		MambaSSMCacheDType: e.MambaSSMCacheDType, KVCacheDType: e.KVCacheDType,
		KernelBlockAlignment: e.KernelBlockAlignmentSize,
	}
	if s.Model.HFConfig != "" && s.Model.Shape.ModelType == "" {
		return fe("model.hf_config", "%q was not read into the shape (set it in the scenario file or with --set)", s.Model.HFConfig)
	}
	return nil
}

func oneOf(v string, allowed ...string) bool {
	for _, a := range allowed {
		if v == a {
			return true
		}
	}
	return false
}

// validateCacheArgs checks the cache arguments against the model, and that
// a numeric backend is asked only for what it computes.
func (s *Scenario) validateCacheArgs() error {
	e := &s.Engine
	sh := &s.Model.Shape
	if e.TensorParallelSize < 1 || e.TensorParallelSize > 1024 {
		return fe("engine.tensor_parallel_size", "must be in [1, 1024], got %d", e.TensorParallelSize)
	}
	if err := sh.CheckTP(e.TensorParallelSize); err != nil {
		return fe("engine.tensor_parallel_size", "%v", err)
	}
	stateDTypes := []string{"auto", "float32", "float16", "bfloat16"}
	if !oneOf(e.MambaCacheDType, stateDTypes...) {
		return fe("engine.mamba_cache_dtype", "unknown %q (want %s)", e.MambaCacheDType, strings.Join(stateDTypes, ", "))
	}
	if !oneOf(e.MambaSSMCacheDType, stateDTypes...) {
		return fe("engine.mamba_ssm_cache_dtype", "unknown %q (want %s)", e.MambaSSMCacheDType, strings.Join(stateDTypes, ", "))
	}
	kvDTypes := []string{"auto", "bfloat16", "float16", "float32", "fp8", "fp8_e4m3", "fp8_e5m2"}
	if !oneOf(e.KVCacheDType, kvDTypes...) {
		return fe("engine.kv_cache_dtype", "unknown %q (want %s)", e.KVCacheDType, strings.Join(kvDTypes, ", "))
	}
	if e.KernelBlockAlignmentSize < 0 || e.KernelBlockAlignmentSize > 4096 {
		return fe("engine.kernel_block_alignment_size", "must be 0 (the backend's: 16, 64 for MLA) or in [1, 4096], got %d", e.KernelBlockAlignmentSize)
	}
	if k := s.Backend.Kind; k != "symbolic" {
		if e.TensorParallelSize != 1 {
			return fe("backend.kind", "%s: the %s backend computes one rank; tensor_parallel_size %d runs with backend.kind=symbolic", k, k, e.TensorParallelSize)
		}
		for _, d := range []struct{ field, v string }{{"mamba_cache_dtype", e.MambaCacheDType}, {"mamba_ssm_cache_dtype", e.MambaSSMCacheDType}, {"kv_cache_dtype", e.KVCacheDType}} {
			if d.v != "auto" {
				return fe("engine."+d.field, "%q: the %s backend caches in the model's float32; leave it auto or use backend.kind=symbolic", d.v, k)
			}
		}
	}
	return nil
}

// hfBase is the shape Marshal compares against for a config-based model:
// the config's own derivation, so only overrides are written back.
func hfBase(sc *Scenario) (model.Shape, error) {
	sh, err := ReadHFConfig(sc.Model.HFConfig, "")
	if err != nil {
		return model.Shape{}, fmt.Errorf("marshal: model.hf_config: %w", err)
	}
	return sh, nil
}
