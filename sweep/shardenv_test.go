package sweep

import (
	"strings"
	"testing"
)

func TestShardFromEnv(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want Shard
		from string
		err  string
	}{
		{nil, Shard{}, "", ""},
		{map[string]string{"JOB_COMPLETION_INDEX": "2", "JOB_COMPLETIONS": "4"}, Shard{2, 4}, "JOB_COMPLETION_INDEX/JOB_COMPLETIONS", ""},
		{map[string]string{"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "8"}, Shard{3, 8}, "SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT", ""},
		{map[string]string{"SLURM_ARRAY_TASK_ID": "8", "SLURM_ARRAY_TASK_COUNT": "8", "SLURM_ARRAY_TASK_MIN": "1"}, Shard{7, 8}, "SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT", ""},
		// Kubernetes first when both are set.
		{map[string]string{"JOB_COMPLETION_INDEX": "0", "JOB_COMPLETIONS": "2", "SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "2"}, Shard{0, 2}, "JOB_COMPLETION_INDEX/JOB_COMPLETIONS", ""},
		{map[string]string{"JOB_COMPLETION_INDEX": "1"}, Shard{}, "", "JOB_COMPLETIONS is not"},
		{map[string]string{"JOB_COMPLETION_INDEX": "4", "JOB_COMPLETIONS": "4"}, Shard{}, "", "0 <= i < n"},
		{map[string]string{"SLURM_ARRAY_TASK_ID": "x", "SLURM_ARRAY_TASK_COUNT": "4"}, Shard{}, "", "want integers"},
		{map[string]string{"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_MIN": "1"}, Shard{}, "", "subtracting SLURM_ARRAY_TASK_MIN"},
	} {
		sh, from, err := ShardFromEnv(func(k string) string { return c.env[k] })
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v: err %v, want %q", c.env, err, c.err)
			}
			continue
		}
		if err != nil || sh != c.want || from != c.from {
			t.Errorf("%v: %v %q %v, want %v %q", c.env, sh, from, err, c.want, c.from)
		}
	}
}
