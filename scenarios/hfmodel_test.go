package scenarios

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func hfScenario(cfg string, extra string) string {
	return "name: hf\nmodel:\n  hf_config: " + cfg + "\n" + extra + "workload:\n  kind: poisson\n  rate: 1\n  count: 4\n"
}

func TestHFConfigScenario(t *testing.T) {
	cfg, err := filepath.Abs("models/qwen3-next-80b-a3b.json")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := Parse([]byte(hfScenario(cfg, "")), "hf.yaml", []string{"engine.tensor_parallel_size=2"})
	if err != nil {
		t.Fatal(err)
	}
	sh := &sc.Model.Shape
	if sh.ModelType != "qwen3_next" || sh.Cache.TensorParallelSize != 2 || sh.WeightsPerRankGiB() != sh.WeightsGiB/2 {
		t.Errorf("shape %s TP %d weights %g/%g", sh.ModelType, sh.Cache.TensorParallelSize, sh.WeightsPerRankGiB(), sh.WeightsGiB)
	}
	// A relative path resolves against the scenario's directory too.
	dir := t.TempDir()
	b, _ := os.ReadFile(cfg)
	if err := os.WriteFile(filepath.Join(dir, "c.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "s.yaml"), []byte(hfScenario("c.json", "")), 0o644); err != nil {
		t.Fatal(err)
	}
	if sc, err := Load(filepath.Join(dir, "s.yaml"), nil); err != nil || sc.Model.Shape.ModelType != "qwen3_next" {
		t.Errorf("relative hf_config: %v", err)
	}
	// Marshal writes hf_config and only the overrides back.
	sc, err = Parse([]byte(hfScenario(cfg, "")), "hf.yaml", []string{"model.weights_gib=150"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := Marshal(sc)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "hf_config: "+cfg) || !strings.Contains(string(out), "weights_gib: 150") || strings.Contains(string(out), "num_layers") {
		t.Errorf("marshal:\n%s", out)
	}
	back, err := Parse(out, "back.yaml", nil)
	if err != nil || back.Model.Shape.WeightsGiB != 150 || back.Model.Shape.NumMambaLayers() != 36 {
		t.Errorf("round trip: %v", err)
	}
}

func TestHFConfigErrors(t *testing.T) {
	cfg, _ := filepath.Abs("models/lfm2-1.2b.json")
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte("{\n  \"model_type\": \"gpt2\"\n}\n"), 0o644)
	for _, c := range []struct {
		doc  string
		sets []string
		want string
	}{
		{hfScenario(cfg, "  preset: tiny-hybrid\n"), nil, "field model.preset: cannot be combined with model.hf_config"},
		{hfScenario(cfg, "  num_layers: 3\n"), nil, "hf.yaml:4: field model.num_layers: cannot be combined with model.hf_config"},
		{hfScenario(cfg, ""), []string{"engine.mamba_cache_dtype=int8"}, "field engine.mamba_cache_dtype: unknown \"int8\""},
		{hfScenario(cfg, ""), []string{"engine.tensor_parallel_size=3"}, "field engine.tensor_parallel_size: 3 does not divide"},
		{hfScenario("/no/such/config.json", ""), nil, "hf.yaml:3: field model.hf_config"},
		{hfScenario(bad, ""), nil, bad + ":2: field model_type: unsupported \"gpt2\""},
		{hfScenario("/dev/zero", ""), nil, "larger than 1 MiB, the most a config.json may hold"},
	} {
		_, err := Parse([]byte(c.doc), "hf.yaml", c.sets)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.sets, err, c.want)
		}
	}
	// A scenario built in code cannot claim a config it did not read.
	sc := Defaults()
	sc.Model.HFConfig = cfg
	if err := sc.Validate(); err == nil || !strings.Contains(err.Error(), "model.hf_config") {
		t.Errorf("unread hf_config: %v", err)
	}
}

// A built-in config is named without a path and loads from any directory;
// an unknown name lists the built-ins.
func TestBuiltinModelConfigs(t *testing.T) {
	t.Chdir(t.TempDir())
	if len(BuiltinModels()) < 8 {
		t.Fatalf("built-in configs: %v", BuiltinModels())
	}
	sc, err := Load("nemotron-h-imposter", nil)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Model.HFConfig != "nemotron-nano-9b-v2" || sc.Model.Shape.ModelType != "nemotron_h" {
		t.Fatalf("hf_config %q gave model_type %q", sc.Model.HFConfig, sc.Model.Shape.ModelType)
	}
	for _, name := range BuiltinModels() {
		sets := []string{"model.hf_config=" + name}
		if _, err := Load("nemotron-h-imposter", sets); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	_, err = Load("nemotron-h-imposter", []string{"model.hf_config=nemotron-nano"})
	if err == nil || !strings.Contains(err.Error(), `unknown built-in model config "nemotron-nano"`) || !strings.Contains(err.Error(), "qwen3-next-80b-a3b") {
		t.Fatalf("unknown name: %v", err)
	}
}
