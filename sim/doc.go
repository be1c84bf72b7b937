// Package sim owns simulated time and randomness: a discrete-event queue
// ordered by (time, priority, sequence), a virtual clock in integer
// nanoseconds, and seeded RNG streams derived per subsystem from one master
// seed.
//
// It must never read the wall clock or a global RNG: a run is a pure function
// of its scenario and seed.
package sim
