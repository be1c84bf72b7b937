package step

import (
	"reflect"
	"testing"
)

// Reset must clear every field: a field added to Record and forgotten in
// Reset would carry one step's value into the next.
func TestResetClearsEveryField(t *testing.T) {
	var r Record
	v := reflect.ValueOf(&r).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 1, 4))
		case reflect.Array:
			f.Index(0).SetInt(7)
		case reflect.Int, reflect.Int32, reflect.Int64:
			f.SetInt(7)
		default:
			t.Fatalf("field %s: kind %s not covered by this test", v.Type().Field(i).Name, f.Kind())
		}
	}
	r.Reset()
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		if f.Kind() == reflect.Slice {
			if f.Len() != 0 || f.Cap() != 4 {
				t.Errorf("field %s: len %d cap %d after Reset, want 0 and its buffer kept", v.Type().Field(i).Name, f.Len(), f.Cap())
			}
		} else if !f.IsZero() {
			t.Errorf("field %s not cleared by Reset", v.Type().Field(i).Name)
		}
	}
}
