package scenarios

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolveModelIDBuiltin(t *testing.T) {
	t.Setenv("HF_HUB_CACHE", t.TempDir())
	for id, want := range map[string]string{
		"Qwen/Qwen3-Next-80B-A3B-Instruct":  "qwen3-next-80b-a3b",
		"qwen/qwen3-next-80b-a3b-instruct":  "qwen3-next-80b-a3b",
		"nvidia/NVIDIA-Nemotron-Nano-9B-v2": "nemotron-nano-9b-v2",
		"moonshotai/Kimi-K3":                "kimi-k3",
	} {
		src, err := ResolveModelID(id)
		if err != nil {
			t.Fatal(err)
		}
		if src.Builtin != want || src.Path != "" {
			t.Errorf("%s: got %+v, want built-in %s", id, src, want)
		}
	}
}

// writeCached lays out a hub cache entry as huggingface_hub does.
func writeCached(t *testing.T, dir, id, rev, config string, main bool) string {
	t.Helper()
	repo := filepath.Join(dir, "models--"+strings.ReplaceAll(id, "/", "--"))
	snap := filepath.Join(repo, "snapshots", rev)
	if err := os.MkdirAll(snap, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(snap, "config.json")
	if err := os.WriteFile(p, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	if main {
		if err := os.MkdirAll(filepath.Join(repo, "refs"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, "refs", "main"), []byte(rev+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

func TestResolveModelIDCache(t *testing.T) {
	cfg, err := builtinModels.ReadFile("models/nemotron-nano-9b-v2.json")
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	t.Setenv("HF_HUB_CACHE", "")
	t.Setenv("HF_HOME", home)
	hub := filepath.Join(home, "hub")
	const id = "acme/Hybrid-9B"
	writeCached(t, hub, id, "bbbb", string(cfg), false)
	want := writeCached(t, hub, id, "aaaa", string(cfg), true) // refs/main wins over the later name
	src, err := ResolveModelID(id)
	if err != nil {
		t.Fatal(err)
	}
	if src.Path != want || src.Builtin != "" {
		t.Fatalf("got %+v, want %s", src, want)
	}
	// hf_config: ORG/NAME in a scenario resolves the same way.
	sc, err := Parse([]byte("name: x\nmodel: {hf_config: "+id+"}\nworkload: {kind: poisson, rate: 1, count: 1}\n"), "x.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Model.Shape.StateKind() != "mamba2" {
		t.Errorf("state kind %s, want mamba2", sc.Model.Shape.StateKind())
	}
	// An id in neither place names where it looked.
	_, err = ResolveModelID("acme/Missing-1B")
	if err == nil || !strings.Contains(err.Error(), hub) || !strings.Contains(err.Error(), "never downloads") {
		t.Errorf("missing id: %v", err)
	}
	for _, s := range []string{"./a/b", "a/b.json", "/abs", "a/b/c", "plain"} {
		if IsModelID(s) {
			t.Errorf("IsModelID(%q) = true", s)
		}
	}
}
