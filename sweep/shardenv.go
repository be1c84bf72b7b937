package sweep

import (
	"fmt"
	"strconv"
)

// ShardFromEnv reads the shard a batch system assigns when --shard is not
// given: a Kubernetes Indexed Job's JOB_COMPLETION_INDEX with
// JOB_COMPLETIONS (the Job's .spec.completions, which the user passes in
// the pod's env: Kubernetes sets only the index), or a Slurm job array's
// SLURM_ARRAY_TASK_ID with SLURM_ARRAY_TASK_COUNT (the index counted from
// SLURM_ARRAY_TASK_MIN, so --array=1-8 gives shards 0..7). from names the
// variables read ("" when none is set: the whole grid). An index without
// its count, or out of range, is an error naming the variables.
func ShardFromEnv(getenv func(string) string) (sh Shard, from string, err error) {
	for _, src := range []struct{ index, count, min string }{
		{"JOB_COMPLETION_INDEX", "JOB_COMPLETIONS", ""},
		{"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN"},
	} {
		iv := getenv(src.index)
		if iv == "" {
			continue
		}
		from = src.index + "/" + src.count
		cv := getenv(src.count)
		if cv == "" {
			return Shard{}, from, fmt.Errorf("%s=%s is set but %s is not: set it to the number of shards, or pass --shard i/n", src.index, iv, src.count)
		}
		i, err1 := strconv.Atoi(iv)
		n, err2 := strconv.Atoi(cv)
		if err1 != nil || err2 != nil {
			return Shard{}, from, fmt.Errorf("%s=%q, %s=%q: want integers", src.index, iv, src.count, cv)
		}
		if src.min != "" {
			if mv := getenv(src.min); mv != "" {
				m, err := strconv.Atoi(mv)
				if err != nil {
					return Shard{}, from, fmt.Errorf("%s=%q: want an integer", src.min, mv)
				}
				i -= m
			}
		}
		if n < 1 || i < 0 || i >= n {
			return Shard{}, from, fmt.Errorf("%s=%s, %s=%s: the shard must satisfy 0 <= i < n (after %s)", src.index, iv, src.count, cv, orNone(src.min))
		}
		return Shard{I: i, N: n}, from, nil
	}
	return Shard{}, "", nil
}

func orNone(s string) string {
	if s == "" {
		return "nothing subtracted"
	}
	return "subtracting " + s
}
