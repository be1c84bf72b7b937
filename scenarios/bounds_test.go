package scenarios

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A scenario file of exactly maxScenarioBytes loads; one byte more is
// refused before it is parsed, naming the file and the bound.
func TestScenarioFileBound(t *testing.T) {
	dir := t.TempDir()
	doc := "name: b\nmodel: {preset: tiny-hybrid}\nengine: {num_gpu_blocks_override: 64}\nworkload: {kind: poisson, rate: 1, count: 1}\n"
	p := filepath.Join(dir, "b.yaml")
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	defer func(n int64) { maxScenarioBytes = n }(maxScenarioBytes)
	maxScenarioBytes = int64(len(doc))
	if _, err := Load(p, nil); err != nil {
		t.Fatalf("at the bound: %v", err)
	}
	maxScenarioBytes--
	_, err := Load(p, nil)
	if err == nil || !strings.Contains(err.Error(), p+": larger than") || !strings.Contains(err.Error(), "scenario file") {
		t.Fatalf("one past the bound: %v", err)
	}
}

// /dev/zero as a scenario is refused at the bound, not read until memory
// runs out.
func TestScenarioDevZero(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	if _, err := Load("/dev/zero", nil); err == nil || !strings.Contains(err.Error(), "larger than 1 MiB") {
		t.Fatalf("/dev/zero: %v", err)
	}
}

// A config.json over its bound is reported as that file's fault, not at
// the scenario line naming it (which `statesim model` writes itself).
func TestConfigFileBound(t *testing.T) {
	dir := t.TempDir()
	cfg, err := builtinModels.ReadFile("models/jamba-v0.1.json")
	if err != nil {
		t.Fatal(err)
	}
	c := filepath.Join(dir, "config.json")
	os.WriteFile(c, cfg, 0o644)
	doc := "name: c\nmodel:\n  hf_config: config.json\nengine: {num_gpu_blocks_override: 64}\nworkload: {kind: poisson, rate: 1, count: 1}\n"
	p := filepath.Join(dir, "c.yaml")
	os.WriteFile(p, []byte(doc), 0o644)
	defer func(n int64) { maxConfigBytes = n }(maxConfigBytes)
	maxConfigBytes = int64(len(cfg))
	if _, err := Load(p, nil); err != nil {
		t.Fatalf("at the bound: %v", err)
	}
	maxConfigBytes--
	_, err = Load(p, nil)
	if err == nil || !strings.HasPrefix(err.Error(), c+": larger than") || strings.Contains(err.Error(), "model.hf_config") {
		t.Fatalf("one past the bound: %v; want the config file named, not the scenario's field", err)
	}
}

// max_model_len's lower bound: 2 (a 1-token prompt and one output token)
// is the smallest that serves a request; 1 leaves no room to generate and
// is refused. Off by one either way, this fails.
func TestMaxModelLenLowerBound(t *testing.T) {
	doc := "name: m\nmodel: {preset: tiny-hybrid}\nengine: {num_gpu_blocks_override: 64, max_model_len: LEN}\n" +
		"workload: {kind: poisson, rate: 1, count: 1, prompt_len: {dist: constant, value: 1}, output_len: {dist: constant, value: 1}}\n"
	if _, err := Parse([]byte(strings.Replace(doc, "LEN", "2", 1)), "m.yaml", nil); err != nil {
		t.Fatalf("max_model_len 2: %v", err)
	}
	_, err := Parse([]byte(strings.Replace(doc, "LEN", "1", 1)), "m.yaml", nil)
	if err == nil || !strings.Contains(err.Error(), "m.yaml:3: field engine.max_model_len: must be in [2,") {
		t.Fatalf("max_model_len 1: %v", err)
	}
}
