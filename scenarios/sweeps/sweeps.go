package sweeps

import (
	"bytes"
	"embed"
	"fmt"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"statesim/sweep"
)

//go:embed *.yaml
var files embed.FS

// Names lists the built-in sweeps.
func Names() []string {
	ents, _ := files.ReadDir(".")
	var out []string
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), ".yaml"); ok {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// Load returns a built-in sweep; ok is false when there is none of that
// name. Unknown fields are errors.
func Load(name string) (spec *sweep.Spec, ok bool, err error) {
	b, err := files.ReadFile(strings.TrimSuffix(name, ".yaml") + ".yaml")
	if err != nil {
		return nil, false, nil
	}
	d := yaml.NewDecoder(bytes.NewReader(b))
	d.KnownFields(true)
	spec = &sweep.Spec{}
	if err := d.Decode(spec); err != nil {
		return nil, true, fmt.Errorf("built-in sweep %s: %v", name, err)
	}
	if spec.Name != strings.TrimSuffix(name, ".yaml") {
		return nil, true, fmt.Errorf("built-in sweep %s: its name field says %q", name, spec.Name)
	}
	return spec, true, spec.Validate()
}
