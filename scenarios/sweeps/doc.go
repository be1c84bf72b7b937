// Package sweeps holds the built-in sweep definitions: grids over a
// built-in scenario that reproduce the seeds' observations (bug A's
// incidence against memory, bug B's first wrapped write against rollouts
// and memory). It only embeds them; package sweep parses and runs them,
// and its tests keep their tables as golden files.
package sweeps
