package scenarios

import (
	"embed"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"statesim/model"
)

// InputError is bad input located in a file (or on the command line):
// "FILE:LINE: field PATH: problem". Callers exit with status 2 on it.
type InputError struct {
	File string
	Line int    // 0 when the value came from --set
	Set  string // the --set argument, when Line is 0
	Path string
	Msg  string
}

func (e *InputError) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d", e.File, e.Line)
	} else if e.Set != "" {
		loc = fmt.Sprintf("%s (--set %s)", e.File, e.Set)
	}
	if e.Path == "" {
		return fmt.Sprintf("%s: %s", loc, e.Msg)
	}
	return fmt.Sprintf("%s: field %s: %s", loc, e.Path, e.Msg)
}

//go:embed *.yaml
var builtin embed.FS

// Builtins lists the embedded scenarios by name (file name without .yaml).
func Builtins() []string {
	ents, _ := builtin.ReadDir(".")
	var out []string
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), ".yaml"); ok && !e.IsDir() {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// Resolve reads a scenario by path, or by built-in name when no such file
// exists ("imposter" or "imposter.yaml"). It returns the bytes, the name
// to report, and the directory relative paths inside it resolve against.
func Resolve(arg string) (data []byte, name, dir string, err error) {
	if data, err = os.ReadFile(arg); err == nil {
		return data, arg, filepath.Dir(arg), nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, arg, "", fmt.Errorf("%s: %w", arg, err)
	}
	base := strings.TrimSuffix(strings.TrimPrefix(arg, "scenarios/"), ".yaml")
	if b, e := builtin.ReadFile(base + ".yaml"); e == nil {
		return b, "scenarios/" + base + ".yaml", "", nil
	}
	return nil, arg, "", fmt.Errorf("%s: no such file and no built-in scenario of that name (built-in: %s)", arg, strings.Join(Builtins(), ", "))
}

// Load resolves and parses a scenario, applying --set overrides.
func Load(arg string, sets []string) (*Scenario, error) {
	data, name, dir, err := Resolve(arg)
	if err != nil {
		return nil, err
	}
	sc, err := Parse(data, name, sets)
	if err != nil {
		return nil, err
	}
	if sc.Workload.Kind == "trace" && dir != "" && !filepath.IsAbs(sc.Workload.Path) {
		sc.Workload.Path = filepath.Join(dir, sc.Workload.Path)
	}
	return sc, nil
}

// Parse decodes YAML strictly onto Defaults(), applies sets
// ("engine.gpu_memory_utilization=0.9"), and validates.
func Parse(data []byte, name string, sets []string) (*Scenario, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, syntaxError(name, err)
	}
	if len(root.Content) == 0 {
		return nil, &InputError{File: name, Msg: "empty scenario"}
	}
	doc := root.Content[0]
	if doc.Kind != yaml.MappingNode {
		return nil, &InputError{File: name, Line: doc.Line, Msg: "a scenario must be a mapping of keys to values"}
	}
	setArgs := map[string]string{}
	for _, s := range sets {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return nil, &InputError{File: name, Set: s, Msg: "want KEY.PATH=VALUE"}
		}
		if err := setNode(doc, strings.Split(k, "."), v); err != nil {
			return nil, &InputError{File: name, Set: s, Path: k, Msg: err.Error()}
		}
		setArgs[k] = s
	}
	sc := Defaults()
	if p := lookup(doc, "model", "preset"); p != nil {
		shape, err := model.Preset(p.Value)
		if err != nil {
			return nil, locate(name, p, "model.preset", err.Error(), setArgs)
		}
		sc.Model.Shape = shape
	}
	d := decoder{file: name, lines: map[string]*yaml.Node{}, sets: setArgs}
	if err := d.decode(doc, reflect.ValueOf(&sc).Elem(), ""); err != nil {
		return nil, err
	}
	if err := sc.Validate(); err != nil {
		var f *FieldError
		if errors.As(err, &f) {
			return nil, d.at(f.Path, f.Msg)
		}
		return nil, &InputError{File: name, Msg: err.Error()}
	}
	sc.File = name
	return &sc, nil
}

func syntaxError(name string, err error) error {
	m := strings.TrimPrefix(err.Error(), "yaml: ")
	var line int
	if n, _ := fmt.Sscanf(m, "line %d:", &line); n == 1 {
		_, rest, _ := strings.Cut(m, ": ")
		return &InputError{File: name, Line: line, Msg: "YAML syntax: " + rest}
	}
	return &InputError{File: name, Msg: "YAML syntax: " + m}
}

func lookup(n *yaml.Node, path ...string) *yaml.Node {
	for _, k := range path {
		if n == nil || n.Kind != yaml.MappingNode {
			return nil
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == k {
				next = n.Content[i+1]
			}
		}
		n = next
	}
	return n
}

// setNode replaces (or adds) the value at path with the YAML scalar v.
// Added nodes have line 0, which errors report as "--set".
func setNode(doc *yaml.Node, path []string, v string) error {
	var val yaml.Node
	if err := yaml.Unmarshal([]byte(v), &val); err != nil || len(val.Content) == 0 {
		val = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Tag: "!!str", Value: v}}}
	}
	vn := val.Content[0]
	zeroLines(vn)
	n := doc
	for i, k := range path {
		if n.Kind != yaml.MappingNode {
			return fmt.Errorf("%s is not a mapping", strings.Join(path[:i], "."))
		}
		var next *yaml.Node
		for j := 0; j+1 < len(n.Content); j += 2 {
			if n.Content[j].Value == k {
				if i == len(path)-1 {
					n.Content[j+1] = vn
					return nil
				}
				next = n.Content[j+1]
			}
		}
		if next == nil {
			next = vn
			if i < len(path)-1 {
				next = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			}
			n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k}, next)
		}
		n = next
	}
	return nil
}

func zeroLines(n *yaml.Node) {
	n.Line, n.Column = 0, 0
	for _, c := range n.Content {
		zeroLines(c)
	}
}

type decoder struct {
	file  string
	lines map[string]*yaml.Node // field path → its value node
	sets  map[string]string
}

func locate(file string, n *yaml.Node, path, msg string, sets map[string]string) error {
	if n != nil && n.Line > 0 {
		return &InputError{File: file, Line: n.Line, Path: path, Msg: msg}
	}
	return &InputError{File: file, Set: sets[path], Path: path, Msg: msg}
}

// at locates a validation error: the field's own node, else its nearest
// parent that appears in the file.
func (d *decoder) at(path, msg string) error {
	for p := path; p != ""; {
		if n, ok := d.lines[p]; ok {
			return locate(d.file, n, path, msg, d.sets)
		}
		i := strings.LastIndexByte(p, '.')
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return &InputError{File: d.file, Path: path, Msg: msg + " (value from the defaults)"}
}

func join(prefix, k string) string {
	if prefix == "" {
		return k
	}
	return prefix + "." + k
}

func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string) error {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if path != "" {
		d.lines[path] = n
	}
	if v.Kind() == reflect.Struct {
		if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
			return nil
		}
		if n.Kind != yaml.MappingNode {
			return locate(d.file, n, path, "want a mapping of keys to values, got "+kindName(n), d.sets)
		}
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			fp := join(path, k.Value)
			if seen[k.Value] {
				return locate(d.file, k, fp, "duplicate key", d.sets)
			}
			seen[k.Value] = true
			f, ok := field(v, k.Value)
			if !ok {
				return locate(d.file, k, fp, fmt.Sprintf("unknown field (known: %s)", strings.Join(fieldNames(v.Type()), ", ")), d.sets)
			}
			if err := d.decode(val, f, fp); err != nil {
				return err
			}
		}
		return nil
	}
	if n.Kind != yaml.ScalarNode {
		return locate(d.file, n, path, fmt.Sprintf("want %s, got %s", typeName(v), kindName(n)), d.sets)
	}
	tmp := reflect.New(v.Type())
	if err := n.Decode(tmp.Interface()); err != nil {
		return locate(d.file, n, path, fmt.Sprintf("want %s, got %q", typeName(v), n.Value), d.sets)
	}
	if f := tmp.Elem(); f.Kind() == reflect.Float64 && (math.IsNaN(f.Float()) || math.IsInf(f.Float(), 0)) {
		return locate(d.file, n, path, fmt.Sprintf("want a finite number, got %q", n.Value), d.sets)
	}
	v.Set(tmp.Elem())
	return nil
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return fmt.Sprintf("%q", n.Value)
}

func typeName(v reflect.Value) string {
	switch v.Kind() {
	case reflect.Int, reflect.Int64:
		return "an integer"
	case reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	}
	return v.Type().String()
}

// field finds the struct field with a yaml tag, looking inside inline
// embedded structs.
func field(v reflect.Value, key string) (reflect.Value, bool) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		tag := sf.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") {
			if f, ok := field(v.Field(i), key); ok {
				return f, true
			}
			continue
		}
		if name == key {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

func fieldNames(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		name, opts, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") {
			out = append(out, fieldNames(sf.Type)...)
			continue
		}
		out = append(out, name)
	}
	return out
}
