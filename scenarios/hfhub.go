package scenarios

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"statesim/model"
)

// ModelSource says where a model id's config.json came from.
type ModelSource struct {
	// ID is the Hugging Face id asked for (ORG/NAME).
	ID string `json:"id"`
	// Builtin is the built-in config's name when one carries the id
	// (its _name_or_path), else empty.
	Builtin string `json:"builtin,omitempty"`
	// Path is the config.json read from the Hugging Face cache, else empty.
	Path string `json:"path,omitempty"`
}

// HFConfig is the value model.hf_config takes for the source: the
// built-in's name or the cached file's path.
func (m ModelSource) HFConfig() string {
	if m.Builtin != "" {
		return m.Builtin
	}
	return m.Path
}

func (m ModelSource) String() string {
	if m.Builtin != "" {
		return fmt.Sprintf("%s: the built-in config %s (scenarios/models/%s.json)", m.ID, m.Builtin, m.Builtin)
	}
	return fmt.Sprintf("%s: %s (Hugging Face cache)", m.ID, m.Path)
}

// IsModelID reports whether s reads as a Hugging Face model id, ORG/NAME,
// rather than a file path: one "/", no ".json" suffix, not starting with
// "." or "/".
func IsModelID(s string) bool {
	org, name, ok := strings.Cut(s, "/")
	return ok && org != "" && name != "" && !strings.Contains(name, "/") &&
		!strings.HasPrefix(s, ".") && !strings.HasSuffix(s, ".json")
}

// ResolveModelID finds the config.json of Hugging Face model id: a
// built-in config whose _name_or_path is id (case-insensitive, as the Hub
// matches ids), else the newest snapshot in the Hugging Face cache
// (HubCacheDirs). It only reads; nothing is downloaded.
func ResolveModelID(id string) (ModelSource, error) {
	if !IsModelID(id) {
		return ModelSource{}, fmt.Errorf("%q is not a Hugging Face model id (ORG/NAME)", id)
	}
	if b := builtinByID(id); b != "" {
		return ModelSource{ID: id, Builtin: b}, nil
	}
	dirs := HubCacheDirs()
	for _, d := range dirs {
		if p, ok := cachedConfig(d, id); ok {
			return ModelSource{ID: id, Path: p}, nil
		}
	}
	return ModelSource{}, fmt.Errorf("model %s: no built-in config has that id (built-ins: %s) and no config.json for it in the Hugging Face cache (looked in %s); statesim never downloads: run `huggingface-cli download %s config.json` or give the config.json's path",
		id, strings.Join(builtinIDs(), ", "), strings.Join(dirs, ", "), id)
}

// builtinByID is the built-in config whose _name_or_path is id.
func builtinByID(id string) string {
	for _, n := range BuiltinModels() {
		if strings.EqualFold(builtinID(n), id) {
			return n
		}
	}
	return ""
}

func builtinID(name string) string {
	data, err := builtinModels.ReadFile("models/" + name + ".json")
	if err != nil {
		return ""
	}
	var c struct {
		ID string `json:"_name_or_path"`
	}
	if json.Unmarshal(data, &c) != nil {
		return ""
	}
	return c.ID
}

// BuiltinModelIDs lists the built-in configs' Hugging Face ids, sorted.
func builtinIDs() []string {
	var ids []string
	for _, n := range BuiltinModels() {
		if id := builtinID(n); id != "" {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// BuiltinModelIDs lists the Hugging Face ids of the built-in configs.
func BuiltinModelIDs() []string { return builtinIDs() }

// HubCacheDirs are the directories huggingface_hub keeps models in, in
// the order it resolves them: $HF_HUB_CACHE, else $HF_HOME/hub, else
// $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub.
func HubCacheDirs() []string {
	if d := os.Getenv("HF_HUB_CACHE"); d != "" {
		return []string{d}
	}
	if d := os.Getenv("HF_HOME"); d != "" {
		return []string{filepath.Join(d, "hub")}
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return []string{filepath.Join(d, "huggingface", "hub")}
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return nil
	}
	return []string{filepath.Join(home, ".cache", "huggingface", "hub")}
}

// cachedConfig finds id's config.json under a hub cache dir, in its
// layout models--ORG--NAME/snapshots/REVISION/config.json: the revision
// refs/main names, else the only snapshot, else the last by name (so the
// choice never depends on directory order).
func cachedConfig(dir, id string) (string, bool) {
	repo := filepath.Join(dir, "models--"+strings.ReplaceAll(id, "/", "--"))
	snaps := filepath.Join(repo, "snapshots")
	if ref, err := os.ReadFile(filepath.Join(repo, "refs", "main")); err == nil {
		rev := strings.TrimSpace(string(ref))
		if rev != "" && !strings.ContainsAny(rev, `/\`) {
			p := filepath.Join(snaps, rev, "config.json")
			if isFile(p) {
				return p, true
			}
		}
	}
	ents, err := os.ReadDir(snaps)
	if err != nil {
		return "", false
	}
	var found []string
	for _, e := range ents {
		p := filepath.Join(snaps, e.Name(), "config.json")
		if isFile(p) {
			found = append(found, p)
		}
	}
	if len(found) == 0 {
		return "", false
	}
	sort.Strings(found)
	return found[len(found)-1], true
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// byID reads a model id's config when path names no file: ReadHFConfig's
// fallback for hf_config: ORG/NAME.
func byID(path string) (model.Shape, error) {
	src, err := ResolveModelID(path)
	if err != nil {
		return model.Shape{}, err
	}
	return ReadHFConfig(src.HFConfig(), "")
}
