//go:build cuda

package cuda

import "statesim/backend"

// The CUDA backend joins the registry as kind "cuda" from its own package:
// a binary that links it (`make cuda`) runs `backend: {kind: cuda}`;
// without it, the registry explains how to get one.
func init() { backend.Register("cuda", FromEnv) }

var (
	_ backend.Backend  = (*Backend)(nil)
	_ backend.Finisher = (*Backend)(nil)
	_ backend.Flusher  = (*Backend)(nil)
	_ backend.Differ   = (*Backend)(nil)
	_ backend.Extra    = (*Backend)(nil)
)

// FromEnv is the registry's factory: a backend on the process's device
// (Shared), which frees the previous run's caches.
func FromEnv(env *backend.Env) (backend.Backend, error) {
	dev, err := Shared()
	if err != nil {
		return nil, err
	}
	if usesStateKernels(env) {
		return NewStateBackend(dev, env)
	}
	return New(dev, ConfigOf(env), env.Sym)
}
