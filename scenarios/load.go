package scenarios

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"statesim/internal/infile"
	"statesim/model"
)

// maxScenarioBytes bounds a scenario file (a variable so tests can lower it).
var maxScenarioBytes int64 = infile.MaxScenarioBytes

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

// builtinTraces holds the trace files built-in scenarios name (relative to
// scenarios/), so they replay from an installed binary anywhere.
//
//go:embed traces/*.csv traces/*.jsonl
var builtinTraces embed.FS

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

// LooksLikePath says whether a SCENARIO argument names a file rather than
// a built-in: it contains a path separator or ends in .yaml or .yml.
func LooksLikePath(arg string) bool {
	return strings.ContainsRune(arg, '/') || strings.ContainsRune(arg, filepath.Separator) ||
		strings.HasSuffix(arg, ".yaml") || strings.HasSuffix(arg, ".yml")
}

// Resolve reads a scenario by built-in name or by path. A bare name
// ("imposter") is the built-in when there is one, whatever the working
// directory holds; an argument that looks like a path (LooksLikePath) is
// the file, falling back to the built-in of that name ("imposter.yaml",
// "scenarios/imposter.yaml") only when no such file exists. It returns
// the bytes, the name to report, the directory relative paths inside it
// resolve against, and whether it is a built-in.
func Resolve(arg string) (data []byte, name, dir string, isBuiltin bool, err error) {
	base := strings.TrimSuffix(strings.TrimPrefix(arg, "scenarios/"), ".yaml")
	fromBuiltin := func() ([]byte, bool) {
		if strings.ContainsRune(base, '/') {
			return nil, false
		}
		b, e := builtin.ReadFile(base + ".yaml")
		return b, e == nil
	}
	if !LooksLikePath(arg) {
		if b, ok := fromBuiltin(); ok {
			return b, "scenarios/" + base + ".yaml", "", true, nil
		}
	}
	if data, err = infile.ReadFile(arg, "scenario file", maxScenarioBytes); err == nil {
		return data, arg, filepath.Dir(arg), false, nil
	}
	var tl *infile.TooLargeError
	if errors.As(err, &tl) {
		return nil, arg, "", false, err // names the file already
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, arg, "", false, fmt.Errorf("%s: %w", arg, err)
	}
	if b, ok := fromBuiltin(); ok {
		return b, "scenarios/" + base + ".yaml", "", true, nil
	}
	return nil, arg, "", false, fmt.Errorf("%s: no such file and no built-in scenario of that name (built-in: %s)%s", arg, strings.Join(Builtins(), ", "), suggest(arg, Builtins()))
}

// Load resolves and parses a scenario, applying --set overrides. A
// relative trace path resolves against the scenario file's directory; a
// built-in's, against the traces embedded with it.
func Load(arg string, sets []string) (*Scenario, error) {
	sc, _, err := Read(arg, sets)
	return sc, err
}

// Read is Load that also returns where each field came from, for the
// rules checked once the scenario is settled (package setup).
func Read(arg string, sets []string) (*Scenario, *Source, error) {
	data, name, dir, isBuiltin, err := Resolve(arg)
	if err != nil {
		return nil, nil, err
	}
	sc, src, err := Decode(data, name, sets)
	if err != nil {
		return nil, nil, err
	}
	if sc.Workload.Kind == "trace" && !filepath.IsAbs(sc.Workload.Path) {
		switch {
		case isBuiltin && embedded(sc.Workload.Path):
			sc.Workload.FS = builtinTraces
		case dir != "":
			sc.Workload.Path = filepath.Join(dir, sc.Workload.Path)
		}
	}
	return sc, src, nil
}

func embedded(path string) bool {
	_, err := fs.Stat(builtinTraces, path)
	return err == nil
}

// suggest is ", did you mean X?" for the known name closest to arg, or "".
func suggest(arg string, known []string) string {
	arg = strings.TrimSuffix(filepath.Base(arg), ".yaml")
	best, bestD := "", 3 // at most two edits away
	for _, k := range known {
		if d := editDistance(arg, k); d < bestD {
			best, bestD = k, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf("; did you mean %s?", best)
}

// Suggest is suggest for other packages' name lists.
func Suggest(arg string, known []string) string { return suggest(arg, known) }

// editDistance is the Levenshtein distance, counting an adjacent swap as
// one edit (the usual typo).
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// Parse decodes YAML strictly onto Defaults(), applies sets
// ("engine.gpu_memory_utilization=0.9"), and validates each field (the
// rules across fields are package setup's).
func Parse(data []byte, name string, sets []string) (*Scenario, error) {
	sc, _, err := Decode(data, name, sets)
	return sc, err
}

// Source says where a parsed scenario's fields came from: a line of its
// file, or a --set argument.
type Source struct{ d decoder }

// At is a problem with the field at path, located where the field (or
// its nearest parent) was given: FILE:LINE: field PATH: problem.
func (s *Source) At(path, msg string) error { return s.d.at(path, msg) }

// Decode is Parse that also returns the fields' Source.
func Decode(data []byte, name string, sets []string) (*Scenario, *Source, error) {
	sc, d, err := decode(data, name, sets)
	if err != nil {
		return nil, nil, err
	}
	return sc, &Source{d: *d}, nil
}

func decode(data []byte, name string, sets []string) (*Scenario, *decoder, error) {
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		if err == io.EOF {
			return nil, nil, &InputError{File: name, Msg: "empty scenario"}
		}
		return nil, nil, syntaxError(name, err)
	}
	if len(root.Content) == 0 {
		return nil, nil, &InputError{File: name, Msg: "empty scenario"}
	}
	var second yaml.Node
	if err := dec.Decode(&second); err != io.EOF {
		if err != nil {
			return nil, nil, syntaxError(name, err)
		}
		line := second.Line
		if len(second.Content) > 0 {
			line = second.Content[0].Line
		}
		return nil, nil, &InputError{File: name, Line: line, Msg: "a second YAML document (after ---): a scenario is one document; put other scenarios in their own files"}
	}
	doc := root.Content[0]
	if doc.Kind != yaml.MappingNode {
		return nil, nil, &InputError{File: name, Line: doc.Line, Msg: "a scenario must be a mapping of keys to values"}
	}
	setArgs := map[string]string{}
	for _, s := range sets {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return nil, nil, &InputError{File: name, Set: s, Msg: "want KEY.PATH=VALUE"}
		}
		if err := checkSet(k, v); err != nil {
			return nil, nil, &InputError{File: name, Set: s, Path: k, Msg: err.Error()}
		}
		if err := setNode(doc, strings.Split(k, "."), v); err != nil {
			return nil, nil, &InputError{File: name, Set: s, Path: k, Msg: err.Error()}
		}
		setArgs[k] = s
	}
	sc := Defaults()
	if p := lookup(doc, "model", "preset"); p != nil {
		shape, err := model.Preset(p.Value)
		if err != nil {
			return nil, nil, locate(name, p, "model.preset", err.Error(), setArgs)
		}
		sc.Model.Shape = shape
	}
	if err := loadHFConfig(doc, &sc, name, setArgs); err != nil {
		return nil, nil, err
	}
	d := decoder{file: name, lines: map[string]*yaml.Node{}, sets: setArgs}
	if err := d.decode(doc, reflect.ValueOf(&sc).Elem(), ""); err != nil {
		return nil, nil, err
	}
	if err := d.defaultsFromNames(&sc); err != nil {
		return nil, nil, err
	}
	if err := sc.Validate(); err != nil {
		var f *FieldError
		if errors.As(err, &f) {
			return nil, nil, d.at(f.Path, f.Msg)
		}
		return nil, nil, &InputError{File: name, Msg: err.Error()}
	}
	sc.File = name
	return &sc, &d, nil
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

// checkSet refuses a --set that would silently replace more than the
// user wrote: a whole top-level section given as a mapping (engine={...}
// would drop vllm_version and every other engine key back to the
// defaults), and an index into a list (engine.patches.0), which --set
// cannot address.
func checkSet(key, v string) error {
	path := strings.Split(key, ".")
	var val yaml.Node
	if len(path) == 1 && yaml.Unmarshal([]byte(v), &val) == nil && len(val.Content) > 0 && val.Content[0].Kind == yaml.MappingNode {
		return fmt.Errorf("--set of a whole section would replace every key of %s, resetting the ones not given to their defaults: set each field, e.g. --set %s.KEY=VALUE", key, key)
	}
	for i, p := range path {
		if _, err := strconv.Atoi(p); err == nil && i > 0 {
			return fmt.Errorf("%s is a list: --set cannot change one item; give the whole list, e.g. --set '%s=[...]'", strings.Join(path[:i], "."), strings.Join(path[:i], "."))
		}
	}
	return nil
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
			return locate(d.file, n, path, "want a mapping of keys to values, got "+NodeKind(n), d.sets)
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
	if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.String {
		// engine.patches: a list of strings (a lone string is a list of one).
		items := []*yaml.Node{n}
		if n.Kind == yaml.SequenceNode {
			items = n.Content
		}
		out := reflect.MakeSlice(v.Type(), 0, len(items))
		for i, it := range items {
			e := reflect.New(v.Type().Elem()).Elem()
			if err := d.decode(it, e, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
			out = reflect.Append(out, e)
		}
		v.Set(out)
		return nil
	}
	if v.Kind() == reflect.Pointer {
		// A tri-state (engine.enable_prefix_caching): absent is nil.
		e := reflect.New(v.Type().Elem())
		if err := d.decode(n, e.Elem(), path); err != nil {
			return err
		}
		v.Set(e)
		return nil
	}
	if n.Kind != yaml.ScalarNode {
		return locate(d.file, n, path, fmt.Sprintf("want %s, got %s", typeName(v), NodeKind(n)), d.sets)
	}
	tmp := reflect.New(v.Type())
	if k := v.Kind(); (k == reflect.Int || k == reflect.Int64 || k == reflect.Uint64) && n.ShortTag() == "!!float" {
		// yaml.v3 truncates 1.5 to 1 in an integer field: refuse
		// fractions, keep integral spellings (1e6, 100.0).
		var f float64
		if err := n.Decode(&f); err != nil || f != math.Trunc(f) || math.Abs(f) >= 1<<62 || k == reflect.Uint64 && f < 0 {
			return locate(d.file, n, path, fmt.Sprintf("want %s, got %q", typeName(v), n.Value), d.sets)
		}
		if k == reflect.Uint64 {
			tmp.Elem().SetUint(uint64(f))
		} else {
			tmp.Elem().SetInt(int64(f))
		}
		v.Set(tmp.Elem())
		return nil
	}
	if k := v.Kind(); (k == reflect.Int || k == reflect.Int64 || k == reflect.Uint64) && n.ShortTag() == "!!int" {
		// yaml.v3 reads 010 as octal 8 and takes 0x10 and 0o10; vLLM's
		// --max-num-seqs 010 is 10. Integers are decimal here too.
		bad := locate(d.file, n, path, fmt.Sprintf("want %s written in decimal, got %q", typeName(v), n.Value), d.sets)
		if k == reflect.Uint64 {
			digits, ok := decimalDigits(n.Value)
			u, err := strconv.ParseUint(digits, 10, 64)
			if !ok || err != nil {
				return bad
			}
			tmp.Elem().SetUint(u)
		} else {
			i, ok := DecimalInt(n.Value)
			if !ok {
				return bad
			}
			tmp.Elem().SetInt(i)
		}
		v.Set(tmp.Elem())
		return nil
	}
	if err := n.Decode(tmp.Interface()); err != nil {
		return locate(d.file, n, path, fmt.Sprintf("want %s, got %q", typeName(v), n.Value), d.sets)
	}
	if f := tmp.Elem(); f.Kind() == reflect.Float64 && (math.IsNaN(f.Float()) || math.IsInf(f.Float(), 0)) {
		return locate(d.file, n, path, fmt.Sprintf("want a finite number, got %q", n.Value), d.sets)
	}
	v.Set(tmp.Elem())
	return nil
}

// DecimalInt reads an integer as Python's int() does: decimal digits, an
// optional sign, underscores between digits; a leading zero is not octal
// ("010" is 10) and 0x / 0o prefixes are not integers.
func DecimalInt(s string) (int64, bool) {
	neg := strings.HasPrefix(s, "-")
	digits, ok := decimalDigits(strings.TrimPrefix(s, "-"))
	if !ok || neg && strings.HasPrefix(s, "-+") {
		return 0, false
	}
	if neg {
		digits = "-" + digits
	}
	i, err := strconv.ParseInt(digits, 10, 64)
	return i, err == nil
}

// decimalDigits is s's digits without a leading "+" and underscores; ok is
// false unless s is decimal digits with underscores between them.
func decimalDigits(s string) (string, bool) {
	t := strings.TrimPrefix(s, "+")
	if t == "" || t[0] == '_' || t[len(t)-1] == '_' || strings.Contains(t, "__") {
		return "", false
	}
	for _, c := range t {
		if (c < '0' || c > '9') && c != '_' {
			return "", false
		}
	}
	return strings.ReplaceAll(t, "_", ""), true
}

// NodeKind says what a YAML value is, for an error about it: "a mapping",
// "a list", "nothing", or the scalar quoted.
func NodeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	if n.ShortTag() == "!!null" {
		return "nothing"
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

// defaultsFromNames fills what a name implies and refuses what a name
// cannot: a device given by name alone takes its memory from the known
// devices' table; an explicit rate_scale of 0 is not "recorded speed".
func (d *decoder) defaultsFromNames(sc *Scenario) error {
	if n, ok := d.lines["device.name"]; ok && sc.Engine.NumGPUBlocksOverride == 0 {
		if _, given := d.lines["device.memory_gib"]; !given {
			gib, known := deviceMemory(sc.Device.Name)
			if !known {
				return locate(d.file, n, "device.name", fmt.Sprintf("unknown device %q: give device.memory_gib (known devices: %s)", sc.Device.Name, strings.Join(deviceNames(), ", ")), d.sets)
			}
			sc.Device.MemoryGiB = gib
		}
	}
	if n, ok := d.lines["workload.rate_scale"]; ok && sc.Workload.RateScale == 0 {
		return locate(d.file, n, "workload.rate_scale", "must be a finite number > 0, got 0 (leave it out to replay at recorded speed)", d.sets)
	}
	return nil
}
