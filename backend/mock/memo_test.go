package mock

import (
	"reflect"
	"testing"

	"statesim/model"
)

// A memoised reference is the recomputation's: a second Mock of the same
// model gets what its own recomputation gives, and a Mock of another
// model (weight seed or shape) is not handed the first model's scores.
func TestReferenceMemoIsRecomputation(t *testing.T) {
	tokens := []int32{5, 77, 3, 200, 9}
	fresh := func(shape model.Shape, weightSeed uint64) *Mock {
		m, err := New(Config{Shape: shape, Layout: shape.Layout(16), NumBlocks: 2, WeightSeed: weightSeed}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	wide := tinyShape(t)
	wide.HiddenSize = 48
	for _, c := range []struct {
		name  string
		shape model.Shape
		seed  uint64
	}{{"first", tinyShape(t), 31}, {"again", tinyShape(t), 31}, {"other weights", tinyShape(t), 32}, {"other shape", wide, 31}} {
		m := fresh(c.shape, c.seed)
		got, err := m.Reference(1234, 17, tokens)
		if err != nil {
			t.Fatal(err)
		}
		want, err := fresh(c.shape, c.seed).reference(&Generated{Seed: 1234, Prompt: 17, Tokens: tokens})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: Reference %v, recomputed %v", c.name, got, want)
		}
		if st := m.Stats(); st.ReferenceTokens != 17+int64(len(tokens))-1 {
			t.Fatalf("%s: %d reference tokens counted, want %d", c.name, st.ReferenceTokens, 17+len(tokens)-1)
		}
	}
}
