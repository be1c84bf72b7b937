// Package sweeps holds the built-in sweep definitions: grids over a
// built-in scenario that reproduce the seeds' observations (bug A's
// incidence against memory, bug B's first wrapped write against rollouts
// and memory). Their tables are golden files of a test.
package sweeps
