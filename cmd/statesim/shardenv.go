package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"statesim/sweep"
)

// shardOf is the --shard argument when given, else the environment's
// shard (envShard); an error is printed as bad input.
func shardOf(arg, cmd string, stderr io.Writer) (sweep.Shard, error) {
	if arg == "" {
		return envShard(stderr, cmd)
	}
	sh, err := sweep.ParseShard(arg)
	if err != nil {
		fmt.Fprintf(stderr, "statesim %s: %v\n", cmd, err)
	}
	return sh, err
}

// envShard is the shard a batch system's environment assigns
// (sweep.ShardFromEnv), said on stderr when one does; an error is printed
// as bad input.
func envShard(stderr io.Writer, cmd string) (sweep.Shard, error) {
	sh, from, err := sweep.ShardFromEnv(os.Getenv)
	if err != nil {
		fmt.Fprintf(stderr, "statesim %s: %v\n", cmd, err)
		return sh, err
	}
	if from != "" {
		fmt.Fprintf(stderr, "statesim %s: shard %d/%d from %s (no --shard given)\n", cmd, sh.I, sh.N, from)
	}
	return sh, nil
}

// shardSeed makes `check` shard i of n of a seed campaign (--shard, or
// the batch system's environment): seed S + i, counterexamples under
// OUT/seed-(S+i), so n shards sharing one volume search n seeds without
// overwriting each other's files.
func shardSeed(arg *string, seed *int64, out *string, stderr io.Writer) (sweep.Shard, error) {
	sh, err := shardOf(*arg, "check", stderr)
	if err != nil {
		return sh, err
	}
	if sh.N > 1 {
		*seed += int64(sh.I)
		*out = filepath.Join(*out, fmt.Sprintf("seed-%d", *seed))
	}
	return sh, nil
}
