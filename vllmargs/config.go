package vllmargs

import (
	"encoding/json"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// pullConfig replaces "--config FILE" by the file's entries, placed right
// after the model when the command line gives one (vLLM's
// _pull_args_from_config), so the command line's own flags, read later,
// win.
func (c *Command) pullConfig(in []arg, readFile ReadFile) ([]arg, error) {
	at := -1
	path := ""
	for i, a := range in {
		name, v, hasVal := strings.Cut(a.s, "=")
		if name != "--config" {
			continue
		}
		if at >= 0 {
			return nil, &Error{Flag: "--config", Origin: cli, Msg: "more than one config file specified (vLLM accepts one)"}
		}
		at, path = i, v
		if !hasVal {
			if i+1 >= len(in) {
				return nil, &Error{Flag: "--config", Origin: cli, Msg: "no config file specified"}
			}
			path = in[i+1].s
		}
	}
	if at < 0 {
		return in, nil
	}
	skip := 2
	if strings.Contains(in[at].s, "=") {
		skip = 1
	}
	if readFile == nil {
		return nil, &Error{Flag: "--config", Origin: cli, Msg: "not accepted here"}
	}
	if ext := path[strings.LastIndex(path, ".")+1:]; ext != "yaml" && ext != "yml" {
		return nil, &Error{Flag: "--config", Origin: cli, Msg: fmt.Sprintf("%s: a config file must be YAML (.yaml or .yml), as vLLM requires", path)}
	}
	data, err := readFile(path)
	if err != nil {
		return nil, &Error{Flag: "--config", Origin: cli, Msg: err.Error()}
	}
	entries, err := configArgs(data, path)
	if err != nil {
		return nil, err
	}
	c.Config = path
	rest := append(append([]arg{}, in[:at]...), in[at+skip:]...)
	// The model stays first when the command line gives it.
	if len(rest) > 0 && !strings.HasPrefix(rest[0].s, "-") {
		return append(append([]arg{rest[0]}, entries...), rest[1:]...), nil
	}
	return append(entries, rest...), nil
}

// configArgs turns vLLM's config YAML into arguments (load_config_file):
// true → --key, false → --no-key, a list → --key items..., a mapping →
// --key JSON, anything else → --key value. Each argument's origin is
// FILE:LINE.
func configArgs(data []byte, path string) ([]arg, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, &Error{Origin: path, Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode {
		return nil, &Error{Origin: fmt.Sprintf("%s:%d", path, m.Line), Msg: "want a mapping of flag names to values"}
	}
	var out []arg
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		origin := fmt.Sprintf("%s:%d", path, k.Line)
		if k.Kind != yaml.ScalarNode || k.Value == "" {
			return nil, &Error{Origin: origin, Msg: "want a flag name as the key"}
		}
		key := "--" + k.Value
		switch v.Kind {
		case yaml.ScalarNode:
			if v.Tag == "!!bool" {
				var b bool
				if err := v.Decode(&b); err != nil {
					return nil, &Error{Flag: key, Origin: origin, Msg: err.Error()}
				}
				if b {
					out = append(out, arg{key, origin})
				} else {
					out = append(out, arg{"--no-" + k.Value, origin})
				}
				continue
			}
			if v.Tag == "!!null" {
				return nil, &Error{Flag: key, Origin: origin, Msg: "no value"}
			}
			out = append(out, arg{key, origin}, arg{v.Value, origin})
		case yaml.SequenceNode:
			if len(v.Content) == 0 {
				continue
			}
			out = append(out, arg{key, origin})
			for _, item := range v.Content {
				if item.Kind != yaml.ScalarNode {
					return nil, &Error{Flag: key, Origin: fmt.Sprintf("%s:%d", path, item.Line), Msg: "want scalar list items"}
				}
				out = append(out, arg{item.Value, origin})
			}
		case yaml.MappingNode:
			var val any
			if err := v.Decode(&val); err != nil {
				return nil, &Error{Flag: key, Origin: origin, Msg: err.Error()}
			}
			js, err := json.Marshal(jsonable(val))
			if err != nil {
				return nil, &Error{Flag: key, Origin: origin, Msg: err.Error()}
			}
			out = append(out, arg{key, origin}, arg{string(js), origin})
		default:
			return nil, &Error{Flag: key, Origin: origin, Msg: "want a value, a list or a mapping"}
		}
	}
	return out, nil
}

// jsonable converts yaml.v3's map[string]any tree (whose keys may be any)
// to one encoding/json accepts.
func jsonable(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = jsonable(e)
		}
		return x
	case map[any]any:
		m := map[string]any{}
		for k, e := range x {
			m[fmt.Sprint(k)] = jsonable(e)
		}
		return m
	case []any:
		for i, e := range x {
			x[i] = jsonable(e)
		}
	}
	return v
}
