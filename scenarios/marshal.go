package scenarios

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"statesim/model"
	"statesim/workload"
)

// alwaysWritten are the keys Marshal writes even when they equal the
// defaults: a reader of a generated scenario should not have to know the
// defaults to see what version, index width and workload it runs.
var alwaysWritten = map[string]bool{
	"name": true, "seed": true, "model.preset": true,
	"engine.vllm_version": true, "engine.state_index_bits": true,
	"engine.max_num_batched_tokens": true, "engine.num_gpu_blocks_override": true,
	"workload.kind": true, "backend.kind": true,
}

// companions are keys that must be written whenever the first is: Parse
// reads device.name alone as "take this known device's memory", so a name
// written without its memory_gib would change the memory (or fail, for a
// name that is not a known device).
var companions = map[string]string{"device.name": "device.memory_gib"}

// Marshal writes sc as YAML that Parse loads back to an identical
// scenario (File aside). Parse decodes onto Defaults() and the preset's
// shape, so only fields that differ from those are written, plus the keys
// a reader wants to see regardless; a field that differs by being zero is
// written as zero, since leaving it out would bring the default back.
func Marshal(sc *Scenario) ([]byte, error) {
	base := Defaults()
	if sc.Model.Preset != "" {
		shape, err := model.Preset(sc.Model.Preset)
		if err != nil {
			return nil, fmt.Errorf("marshal: %w", err)
		}
		base.Model.Shape = shape
	}
	if sc.Model.HFConfig != "" {
		shape, err := hfBase(sc)
		if err != nil {
			return nil, err
		}
		base.Model.Shape = shape
	}
	doc := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	if err := emit(doc, reflect.ValueOf(sc).Elem(), reflect.ValueOf(&base).Elem(), ""); err != nil {
		return nil, err
	}
	var b strings.Builder
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("marshal: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("marshal: %w", err)
	}
	return []byte(b.String()), nil
}

// emit appends v's fields that differ from base (or are always written)
// to the mapping m; nested structs become nested mappings, written only
// when they have something to say.
func emit(m *yaml.Node, v, base reflect.Value, path string) error {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		name, opts, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
		if name == "-" || !sf.IsExported() {
			continue
		}
		fv, bv := v.Field(i), base.Field(i)
		if strings.Contains(opts, "inline") {
			if err := emit(m, fv, bv, path); err != nil {
				return err
			}
			continue
		}
		fp := join(path, name)
		var val *yaml.Node
		if fv.Kind() == reflect.Struct {
			sub := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			if fv.Type() == reflect.TypeOf(workload.Dist{}) {
				sub.Style = yaml.FlowStyle
			}
			if err := emit(sub, fv, bv, fp); err != nil {
				return err
			}
			if len(sub.Content) == 0 {
				continue
			}
			val = sub
		} else if fv.Kind() == reflect.Pointer { // a tri-state: nil is absent
			if fv.IsNil() {
				continue
			}
			var err error
			if val, err = scalar(fv.Elem(), fp); err != nil {
				return err
			}
		} else if fv.Kind() == reflect.Slice { // engine.patches
			if fv.Len() == 0 {
				continue
			}
			val = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Style: yaml.FlowStyle}
			for j := 0; j < fv.Len(); j++ {
				val.Content = append(val.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: fv.Index(j).String()})
			}
		} else {
			same := fv.Interface() == bv.Interface() && !companionWritten(m, path, name)
			if same && (!alwaysWritten[fp] || fv.IsZero() && fp == "model.preset") {
				continue // an empty preset means "no preset": Parse rejects preset: ""
			}
			var err error
			if val, err = scalar(fv, fp); err != nil {
				return err
			}
		}
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: name}, val)
	}
	return nil
}

// companionWritten reports whether field name (at path) is the companion
// of a key already in the mapping m (a lead precedes its companion in the
// struct's field order).
func companionWritten(m *yaml.Node, path, name string) bool {
	for key, comp := range companions {
		if comp != join(path, name) {
			continue
		}
		lead := key[strings.LastIndex(key, ".")+1:]
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == lead {
				return true
			}
		}
	}
	return false
}

func scalar(v reflect.Value, path string) (*yaml.Node, error) {
	n := &yaml.Node{Kind: yaml.ScalarNode}
	switch v.Kind() {
	case reflect.String:
		n.Tag, n.Value = "!!str", v.String()
		if strings.Contains(n.Value, "\n") {
			// yaml.v3 writes a string of newlines alone as a block scalar
			// with no lines ("|2+"), which reads back empty; quoted, every
			// string reads back as written.
			n.Style = yaml.DoubleQuotedStyle
		}
	case reflect.Bool:
		n.Tag, n.Value = "!!bool", strconv.FormatBool(v.Bool())
	case reflect.Int, reflect.Int64:
		n.Tag, n.Value = "!!int", strconv.FormatInt(v.Int(), 10)
	case reflect.Uint64:
		n.Tag, n.Value = "!!int", strconv.FormatUint(v.Uint(), 10)
	case reflect.Float64:
		// Shortest form that parses back to the same float64; YAML's own
		// spellings for the non-finite values.
		f := v.Float()
		n.Tag = "!!float"
		switch {
		case math.IsNaN(f):
			n.Value = ".nan"
		case math.IsInf(f, 1):
			n.Value = ".inf"
		case math.IsInf(f, -1):
			n.Value = "-.inf"
		default:
			n.Value = strconv.FormatFloat(f, 'g', -1, 64)
			if !strings.ContainsAny(n.Value, ".e") {
				n.Value += ".0"
			}
		}
	default:
		return nil, fmt.Errorf("marshal: field %s: unsupported type %s", path, v.Type())
	}
	return n, nil
}
