package sweeps

import (
	"bytes"
	"embed"
	"fmt"
	"os"
	"path/filepath"
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

// Load returns a built-in sweep, or a sweep definition file (a YAML file
// with a top-level vary key); ok is false when arg is neither (then it
// names a scenario). Unknown fields are errors.
func Load(arg string) (spec *sweep.Spec, ok bool, err error) {
	name := strings.TrimSuffix(arg, ".yaml")
	if b, err := files.ReadFile(name + ".yaml"); err == nil {
		spec, err := parse(b, "built-in sweep "+name)
		if err == nil && spec.Name != name {
			err = fmt.Errorf("built-in sweep %s: its name field says %q", name, spec.Name)
		}
		return spec, true, err
	}
	if !strings.HasSuffix(arg, ".yaml") && !strings.HasSuffix(arg, ".yml") {
		return nil, false, nil
	}
	b, err := os.ReadFile(arg)
	if err != nil {
		return nil, false, nil // not a file: let the scenario loader explain
	}
	var top map[string]any
	if yaml.Unmarshal(b, &top) != nil || top["vary"] == nil {
		return nil, false, nil // a scenario file
	}
	spec, err = parse(b, arg)
	if err != nil {
		return nil, true, err
	}
	// A relative scenario path is relative to the sweep file.
	if sc := filepath.Join(filepath.Dir(arg), spec.Scenario); !filepath.IsAbs(spec.Scenario) && fileExists(sc) {
		spec.Scenario = sc
	}
	if spec.Name == "" {
		spec.Name = strings.TrimSuffix(strings.TrimSuffix(filepath.Base(arg), ".yaml"), ".yml")
	}
	return spec, true, nil
}

func parse(b []byte, what string) (*sweep.Spec, error) {
	d := yaml.NewDecoder(bytes.NewReader(b))
	d.KnownFields(true)
	spec := &sweep.Spec{Seeds: 1}
	if err := d.Decode(spec); err != nil {
		return nil, fmt.Errorf("%s: %v", what, err)
	}
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %v", what, err)
	}
	return spec, nil
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}
