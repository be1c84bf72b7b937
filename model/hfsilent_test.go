package model

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// editConfig is a built-in config with keys replaced (nil deletes one).
func editConfig(t *testing.T, name string, set map[string]any) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "scenarios", "models", name))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for k, v := range set {
		m[k] = v
	}
	out, _ := json.MarshalIndent(m, "", "  ")
	return out
}

// A config that means something else than it says is refused: a Jamba
// period of 0 (transformers divides by it; it used to read as all-Mamba
// or no MoE) and text after the JSON object (it used to be ignored).
func TestConfigSilentChangesRefused(t *testing.T) {
	for _, c := range []struct {
		data []byte
		want string
	}{
		{editConfig(t, "jamba-v0.1.json", map[string]any{"attn_layer_period": 0}), "field attn_layer_period: must be >= 1"},
		{editConfig(t, "jamba-v0.1.json", map[string]any{"expert_layer_period": 0}), "field expert_layer_period: must be >= 1"},
		{append(editConfig(t, "jamba-v0.1.json", nil), []byte("\n\n{\"num_hidden_layers\": 2}\n")...), "text after the JSON object"},
	} {
		_, err := FromHFConfig(c.data, "config.json")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want %q, got %v", c.want, err)
		}
	}
	if _, err := FromHFConfig(append(editConfig(t, "jamba-v0.1.json", nil), " \n\t\n"...), "config.json"); err != nil {
		t.Errorf("trailing whitespace: %v", err)
	}
}

// A trailing object is reported at its own line.
func TestTrailingTextLine(t *testing.T) {
	_, err := FromHFConfig([]byte("{\"model_type\": \"jamba\"}\n\n}"), "config.json")
	if err == nil || !strings.Contains(err.Error(), "config.json:3:") {
		t.Fatalf("%v", err)
	}
}

// hybrid_override_pattern is counted in characters: a pattern of the
// right length with a multi-byte character names that character's layer.
func TestPatternCountedInCharacters(t *testing.T) {
	s := loadConfig(t, "nemotron-nano-9b-v2.json")
	b, _ := os.ReadFile(filepath.Join("..", "scenarios", "models", "nemotron-nano-9b-v2.json"))
	var m map[string]any
	json.Unmarshal(b, &m)
	pat := []rune(m["hybrid_override_pattern"].(string))
	if len(pat) != s.NumLayers {
		t.Fatalf("pattern of %d layers, config of %d", len(pat), s.NumLayers)
	}
	pat[5] = '★'
	_, err := FromHFConfig(editConfig(t, "nemotron-nano-9b-v2.json", map[string]any{"hybrid_override_pattern": string(pat)}), "config.json")
	if err == nil || !strings.Contains(err.Error(), `layer 5 is '★'`) {
		t.Fatalf("pattern with a multi-byte character: %v", err)
	}
}
