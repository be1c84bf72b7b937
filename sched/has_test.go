package sched

import "testing"

func TestVersionHas(t *testing.T) {
	for _, c := range []struct {
		version string
		patches []string
		pr      int
		want    bool
	}{
		{"v0.22", nil, 51565, false},
		{"v0.31", nil, 51565, true},
		{"v0.31", []string{"-51565"}, 51565, false},
		{"v0.31", []string{"+53059"}, 53059, true},
		{"v0.31", nil, 53059, false},
		{"v0.13", nil, 32118, false},
		{"v0.14", nil, 32118, true},
		{"v0", nil, 32118, false},
		{"v0.31", nil, 35275, false}, // not modelled
	} {
		v, err := ParseVersion(c.version)
		if err != nil {
			t.Fatal(err)
		}
		if v, err = Patched(v, c.patches); err != nil {
			t.Fatal(err)
		}
		if got := v.Has(c.pr); got != c.want {
			t.Errorf("%s %v Has(%d) = %v, want %v", c.version, c.patches, c.pr, got, c.want)
		}
	}
}
