package sweep

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"

	"statesim/internal/infile"
	"statesim/scenarios"
	"statesim/scenarios/sweeps"
)

// Names lists the built-in sweeps (scenarios/sweeps).
func Names() []string { return sweeps.Names() }

// Load returns a built-in sweep, or a sweep definition file (a YAML file
// with a top-level vary key); ok is false when arg is neither (then it
// names a scenario). Unknown fields are errors.
func Load(arg string) (spec *Spec, ok bool, err error) {
	name := strings.TrimSuffix(arg, ".yaml")
	if b, file, ok := sweeps.Read(name); ok {
		spec, err := parse(b, file)
		if err == nil && spec.Name != name {
			err = fmt.Errorf("built-in sweep %s: its name field says %q", name, spec.Name)
		}
		return spec, true, err
	}
	if !strings.HasSuffix(arg, ".yaml") && !strings.HasSuffix(arg, ".yml") {
		return nil, false, nil
	}
	b, err := infile.ReadFile(arg, "sweep file", infile.MaxScenarioBytes)
	if err != nil {
		var tl *infile.TooLargeError
		if errors.As(err, &tl) {
			return nil, false, err
		}
		return nil, false, nil // not a file: let the scenario loader explain
	}
	if !hasVary(b) {
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

// parse reads a sweep definition; errors are "FILE:LINE: field PATH:
// problem", in the words of the file, never of Go types.
func parse(b []byte, file string) (*Spec, error) {
	bad := func(n *yaml.Node, path, format string, a ...any) error {
		line := 0
		if n != nil {
			line = n.Line
		}
		return &scenarios.InputError{File: file, Line: line, Path: path, Msg: fmt.Sprintf(format, a...)}
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var root yaml.Node
	if err := dec.Decode(&root); err != nil {
		return nil, &scenarios.InputError{File: file, Msg: "YAML syntax: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	var second yaml.Node
	if dec.Decode(&second) == nil {
		return nil, bad(&second, "", "a second YAML document (after ---): a sweep is one document")
	}
	if len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return nil, bad(&root, "", "a sweep must be a mapping of keys to values (name, description, scenario, set, vary, seeds, metric)")
	}
	spec := &Spec{Seeds: 1, File: file}
	str := func(n *yaml.Node, path string, dst *string) error {
		if n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
			return bad(n, path, "want a string, got %s", scenarios.NodeKind(n))
		}
		*dst = n.Value
		return nil
	}
	list := func(n *yaml.Node, path string) ([]*yaml.Node, error) {
		if n.Kind != yaml.SequenceNode {
			return nil, bad(n, path, "want a list, got %s", scenarios.NodeKind(n))
		}
		return n.Content, nil
	}
	doc := root.Content[0]
	seen := map[string]bool{}
	for i := 0; i+1 < len(doc.Content); i += 2 {
		k, v := doc.Content[i], doc.Content[i+1]
		if seen[k.Value] {
			return nil, bad(k, k.Value, "duplicate key")
		}
		seen[k.Value] = true
		var err error
		switch k.Value {
		case "name":
			err = str(v, "name", &spec.Name)
		case "description":
			err = str(v, "description", &spec.Description)
		case "scenario":
			err = str(v, "scenario", &spec.Scenario)
		case "metric":
			err = str(v, "metric", &spec.Metric)
		case "seeds":
			if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" {
				return nil, bad(v, "seeds", "want an integer, got %s", scenarios.NodeKind(v))
			}
			n, ok := scenarios.DecimalInt(v.Value) // 010 is 10, as in a scenario
			if !ok || n > MaxCells {
				return nil, bad(v, "seeds", "want a decimal integer up to %d, got %s", MaxCells, scenarios.NodeKind(v))
			}
			spec.Seeds = int(n)
			if spec.Seeds < 1 {
				return nil, bad(v, "seeds", "must be >= 1, got %d", spec.Seeds)
			}
		case "set":
			items, err := list(v, "set")
			if err != nil {
				return nil, err
			}
			for j, it := range items {
				var x string
				if err := str(it, fmt.Sprintf("set[%d]", j), &x); err != nil {
					return nil, err
				}
				if kk, _, ok := strings.Cut(x, "="); !ok || kk == "" {
					return nil, bad(it, fmt.Sprintf("set[%d]", j), "want KEY.PATH=VALUE, got %q", x)
				}
				spec.Sets = append(spec.Sets, x)
				spec.SetLines = append(spec.SetLines, it.Line)
			}
		case "vary":
			items, err := list(v, "vary")
			if err != nil {
				return nil, err
			}
			for j, it := range items {
				path := fmt.Sprintf("vary[%d]", j)
				if it.Kind != yaml.MappingNode {
					return nil, bad(it, path, "want a mapping {key: KEY.PATH, values: [v1, v2, ...]}, got %s", scenarios.NodeKind(it))
				}
				var a Axis
				for m := 0; m+1 < len(it.Content); m += 2 {
					ak, av := it.Content[m], it.Content[m+1]
					switch ak.Value {
					case "key":
						if err := str(av, path+".key", &a.Key); err != nil {
							return nil, err
						}
					case "values":
						vals, err := list(av, path+".values")
						if err != nil {
							return nil, err
						}
						for n, x := range vals {
							var val string
							if err := str(x, fmt.Sprintf("%s.values[%d]", path, n), &val); err != nil {
								return nil, err
							}
							a.Values = append(a.Values, val)
							a.Lines = append(a.Lines, x.Line)
						}
					default:
						return nil, bad(ak, path+"."+ak.Value, "unknown field (known: key, values)")
					}
				}
				if a.Key == "" {
					return nil, bad(it, path+".key", "missing: the scenario field to vary")
				}
				if len(a.Values) == 0 {
					return nil, bad(it, path+".values", "missing: the values to run %s at", a.Key)
				}
				spec.Axes = append(spec.Axes, a)
			}
		default:
			return nil, bad(k, k.Value, "unknown field (known: name, description, scenario, set, vary, seeds, metric)")
		}
		if err != nil {
			return nil, err
		}
	}
	if err := spec.Validate(); err != nil {
		return nil, &scenarios.InputError{File: file, Msg: err.Error()}
	}
	return spec, nil
}

// hasVary says whether a YAML document has a top-level vary key: a sweep.
// It reads the node tree, which neither expands aliases nor refuses a
// duplicate key, so a sweep with those reaches parse and its error.
func hasVary(b []byte) bool {
	var root yaml.Node
	if yaml.Unmarshal(b, &root) != nil || len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return false
	}
	doc := root.Content[0]
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if doc.Content[i].Value == "vary" {
			return true
		}
	}
	return false
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}
