package model

import "sort"

// AllPresetNames lists every name Preset accepts, sorted: PresetNames
// plus the presets only searches name (tiny-hybrid-mamba2). Editors'
// schemas and shell completion offer them all.
func AllPresetNames() []string {
	out := make([]string, 0, len(presets))
	for n := range presets {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
