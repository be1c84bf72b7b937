package backend

import (
	"fmt"
	"sort"
	"strings"

	"statesim/model"
	"statesim/setup"
)

// Env is what a factory gets to build a backend: the settled run, its
// shape and layout, the pool size, and the symbolic backend that every
// numeric backend composes (it performs the checked cache accesses).
type Env struct {
	Setup     *setup.Setup
	Shape     *model.Shape
	Layout    model.Layout
	NumBlocks int
	Sym       *Symbolic
}

// Factory builds a backend for one run.
type Factory func(env *Env) (Backend, error)

// The registry is filled by init functions of the backend packages a
// binary links (like database/sql's drivers) and only read afterwards.
var (
	factories = map[string]Factory{}
	// missing explains kinds a binary may be built without.
	missing = map[string]string{}
)

// Register makes a backend kind available to scenarios. Call it from an
// init function.
func Register(kind string, f Factory) {
	if _, dup := factories[kind]; dup || kind == "symbolic" {
		panic("backend: kind registered twice: " + kind)
	}
	factories[kind] = f
}

// Sizer bounds the host bytes a numeric backend's cache tensors can hold
// in a run (Env without Sym): checks.max_memory_gib weighs it. A kind
// without one holds the layout's block bytes for every block.
type Sizer func(env *Env) (int64, error)

var sizers = map[string]Sizer{}

// RegisterSizer gives kind's bound on its caches. Call it from an init
// function, beside Register.
func RegisterSizer(kind string, f Sizer) {
	if _, dup := sizers[kind]; dup {
		panic("backend: sizer registered twice: " + kind)
	}
	sizers[kind] = f
}

// CacheBytes is kind's bound on its cache tensors for env, or −1 where
// the kind gives none (the layout's bytes apply).
func CacheBytes(kind string, env *Env) (int64, error) {
	if f, ok := sizers[kind]; ok {
		return f(env)
	}
	return -1, nil
}

// Explain records why kind may be missing from a binary, for its error.
func Explain(kind, why string) { missing[kind] = why }

// Lookup returns the factory of kind; the symbolic backend needs none.
func Lookup(kind string) (Factory, error) {
	if f, ok := factories[kind]; ok {
		return f, nil
	}
	if why, ok := missing[kind]; ok {
		return nil, fmt.Errorf("backend %s: %s", kind, why)
	}
	return nil, fmt.Errorf("backend %s: not available in this build (available: %s)", kind, strings.Join(Kinds(), ", "))
}

// Available reports whether kind runs in this binary, and if not, why.
func Available(kind string) (bool, string) {
	if kind == "symbolic" {
		return true, ""
	}
	if _, err := Lookup(kind); err != nil {
		return false, err.Error()
	}
	return true, ""
}

// Kinds lists the kinds this binary runs, sorted.
func Kinds() []string {
	out := []string{"symbolic"}
	for k := range factories {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func init() {
	Explain("cuda", "this binary was built without CUDA support: build bin/statesim-cuda with `make cuda` (it fetches the CUDA headers; see Real GPUs in README.md) and run that binary on a machine with an NVIDIA GPU")
}
