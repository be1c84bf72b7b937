package sweeps

import (
	"embed"
	"sort"
	"strings"
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

// Read returns the built-in sweep name's definition and the file name its
// errors give; false when there is none of that name.
func Read(name string) (data []byte, file string, ok bool) {
	b, err := files.ReadFile(name + ".yaml")
	if err != nil {
		return nil, "", false
	}
	return b, "scenarios/sweeps/" + name + ".yaml", true
}
