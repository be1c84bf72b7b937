package scenarios

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"statesim/model"
)

// roundTrip marshals sc, parses the YAML back, and requires the same
// scenario.
func roundTrip(t *testing.T, sc *Scenario) []byte {
	t.Helper()
	data, err := Marshal(sc)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	back, err := Parse(data, "roundtrip.yaml", nil)
	if err != nil {
		t.Fatalf("Parse(Marshal(sc)): %v\n%s", err, data)
	}
	back.File = sc.File
	back.Workload.FS = sc.Workload.FS // where the trace lives, like File: not part of the YAML
	// %#v prints floats in their shortest exact form, and NaN as NaN,
	// which DeepEqual would call unequal to itself.
	if !reflect.DeepEqual(back, sc) && fmt.Sprintf("%#v", *back) != fmt.Sprintf("%#v", *sc) {
		t.Fatalf("round trip changed the scenario\nwant %+v\ngot  %+v\nYAML:\n%s", *sc, *back, data)
	}
	return data
}

func TestMarshalRoundTripBuiltins(t *testing.T) {
	for _, name := range Builtins() {
		t.Run(name, func(t *testing.T) {
			sc, err := Load(name, nil)
			if err != nil {
				t.Fatal(err)
			}
			roundTrip(t, sc)
		})
	}
}

// leaf is one scalar field of a scenario, by YAML path.
type leaf struct {
	path string
	v    reflect.Value
}

func leaves(v reflect.Value, path string, out *[]leaf) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		name, opts, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		fp := path
		if !strings.Contains(opts, "inline") {
			fp = join(path, name)
		}
		if sf.Type.Kind() == reflect.Struct {
			leaves(v.Field(i), fp, out)
			continue
		}
		*out = append(*out, leaf{fp, v.Field(i)})
	}
}

// mutations proposes values different from v's current one, including
// zero, so that fields which differ from the defaults by being zero are
// covered.
func mutations(v reflect.Value) []any {
	switch v.Kind() {
	case reflect.Int, reflect.Int64:
		n := v.Int()
		return []any{n + 1, n - 1, 0, n * 2, 3}
	case reflect.Uint64:
		n := v.Uint()
		return []any{n + 1, uint64(0), uint64(1) << 63}
	case reflect.Float64:
		f := v.Float()
		return []any{f * 1.5, f + 0.25, 0.0, 1e-7, 123456789.125}
	case reflect.Bool:
		return []any{!v.Bool()}
	case reflect.String:
		return []any{"", "x: y", "v0.14", "priority", "bfloat16", "mock", "true", "0.5", "#", "tiny-hybrid"}
	}
	return nil
}

// TestMarshalRoundTripEveryField changes one field at a time to every
// proposed value that still validates and requires each to survive.
func TestMarshalRoundTripEveryField(t *testing.T) {
	start, err := Load("imposter", nil)
	if err != nil {
		t.Fatal(err)
	}
	var ls []leaf
	leaves(reflect.ValueOf(start).Elem(), "", &ls)
	tried := 0
	for _, l := range ls {
		for _, m := range mutations(l.v) {
			sc := *start
			var fs []leaf
			leaves(reflect.ValueOf(&sc).Elem(), "", &fs)
			var f reflect.Value
			for _, x := range fs {
				if x.path == l.path {
					f = x.v
				}
			}
			mv := reflect.ValueOf(m).Convert(f.Type())
			if mv.Interface() == f.Interface() {
				continue
			}
			f.Set(mv)
			if sc.Validate() != nil {
				continue
			}
			if _, err := model.Preset(sc.Model.Preset); sc.Model.Preset != "" && err != nil {
				continue // Parse resolves presets by name; an unknown one is not a scenario
			}
			t.Run(l.path, func(t *testing.T) { roundTrip(t, &sc) })
			tried++
		}
	}
	if tried < len(ls) {
		t.Fatalf("only %d valid mutations for %d fields: the test lost its reach", tried, len(ls))
	}
}

func TestMarshalWritesDifferencesOnly(t *testing.T) {
	sc := Defaults()
	sc.Name = "tiny"
	sc.Model.Preset = "tiny-hybrid"
	sc.Model.Shape, _ = model.Preset("tiny-hybrid")
	sc.Workload.Kind, sc.Workload.NumPrompts, sc.Workload.BatchSize = "batches", 3, 2
	if err := sc.Validate(); err != nil {
		t.Fatal(err)
	}
	data := roundTrip(t, &sc)
	s := string(data)
	for _, want := range []string{"preset: tiny-hybrid", "vllm_version: fixed", "num_prompts: 3", "kind: batches"} {
		if !strings.Contains(s, want) {
			t.Errorf("YAML lacks %q:\n%s", want, s)
		}
	}
	// Preset fields and untouched defaults are implied, not repeated.
	for _, not := range []string{"hidden_size", "gpu_memory_utilization", "timing", "prompt_len"} {
		if strings.Contains(s, not) {
			t.Errorf("YAML repeats the default %q:\n%s", not, s)
		}
	}
}

func TestMarshalUnknownPreset(t *testing.T) {
	sc := Defaults()
	sc.Model.Preset = "no-such-model"
	if _, err := Marshal(&sc); err == nil || !strings.Contains(err.Error(), "no-such-model") {
		t.Fatalf("want an error naming the preset, got %v", err)
	}
}

// FuzzMarshalRoundTrip: any YAML that parses must survive Marshal and
// Parse unchanged.
func FuzzMarshalRoundTrip(f *testing.F) {
	for _, name := range Builtins() {
		data, _, _, _, err := Resolve(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("model: {preset: tiny-hybrid}\nsampling: {temperature: .nan}\nworkload: {kind: batches, num_prompts: 1, batch_size: 1}\n"))
	f.Add([]byte("model: {preset: tiny-hybrid, hidden_size: 64}\nengine: {num_gpu_blocks_override: 9, max_num_batched_tokens: 2}\nworkload: {kind: poisson, rate: 0.5, count: 3, prompt_len: {dist: uniform, min: 1, max: 9}}\n"))
	// Found by this target: a device name (even "") with the default
	// memory used to be written without its memory_gib.
	f.Add([]byte("model: {preset: tiny-hybrid}\ndevice: {name: \"\", memory_gib: 139}\nworkload: {kind: batches, num_prompts: 1, batch_size: 1}\n"))
	f.Add([]byte("model: {preset: tiny-hybrid}\ndevice: {name: foo, memory_gib: 80}\nworkload: {kind: batches, num_prompts: 1, batch_size: 1}\n"))
	f.Add([]byte("model: {preset: tiny-hybrid}\nengine: {prefix_match_unit: 16}\nworkload: {kind: batches, num_prompts: 1, batch_size: 1}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := Parse(data, "fuzz.yaml", nil)
		if err != nil {
			return
		}
		roundTrip(t, sc)
	})
}

// engine.prefix_match_unit is read, written back when set, and left out
// when unset (0, vLLM's None), so that scenarios without it marshal as
// before.
func TestPrefixMatchUnitRoundTrip(t *testing.T) {
	sc, err := Parse([]byte(good), "t.yaml", []string{"engine.prefix_match_unit=32"})
	if err != nil {
		t.Fatal(err)
	}
	if sc.Engine.PrefixMatchUnit != 32 {
		t.Fatalf("prefix_match_unit %d, want 32", sc.Engine.PrefixMatchUnit)
	}
	b, err := Marshal(sc)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "prefix_match_unit: 32") {
		t.Errorf("marshalled without prefix_match_unit:\n%s", b)
	}
	roundTrip(t, sc)
	plain, err := Parse([]byte(good), "t.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, err = Marshal(plain); err != nil || strings.Contains(string(b), "prefix_match_unit") {
		t.Errorf("unset prefix_match_unit written (%v):\n%s", err, b)
	}
}
