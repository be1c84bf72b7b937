// Command statesim replays scenarios against vLLM scheduler models and
// reports silent state-cache corruption.
//
//	statesim run SCENARIO [--json] [--trace FILE] [--set key=value]...
//	statesim scenarios
//
// Exit status: 0 clean, 1 violations found, 2 bad input.
package main
