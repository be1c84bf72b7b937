package scenarios

import (
	"strings"
	"testing"
)

const sessionsYAML = `name: s
seed: 1
model:
  preset: tiny-attention
engine:
  vllm_version: v0.22
  num_gpu_blocks_override: 1000
  max_model_len: 4096
workload:
  kind: sessions
  sessions: 4
  turns_per_session: 3
  think_time_s: 1
  system_prompt_tokens: 100
  prompt_len: {dist: uniform, min: 4, max: 200}
  output_len: {dist: constant, value: 50}
`

// Bad sessions and hash-id fields name the file, the line and the field; a
// session whose last turn cannot fit max_model_len is refused at start-up
// (its turns would be rejected and the session would never end).
func TestSessionAndHashFieldErrors(t *testing.T) {
	if _, err := Parse([]byte(sessionsYAML), "s.yaml", nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		from, to, want string
	}{
		{"turns_per_session: 3", "turns_per_session: 0", "s.yaml:12: field workload.turns_per_session: must be >= 1, got 0"},
		{"think_time_s: 1", "think_time_s: -2", "s.yaml:13: field workload.think_time_s: must be a finite number >= 0, got -2"},
		{"system_prompt_tokens: 100", "system_prompt_tokens: -1", "s.yaml:14: field workload.system_prompt_tokens: must be in 0.."},
		{"sessions: 4", "sessions: 2000000", "s.yaml:11: field workload.sessions: 2000000 is more than 1048576 sessions starting at once"},
		{"max_model_len: 4096", "max_model_len: 850", "s.yaml:8: field engine.max_model_len: 850 is less than the longest prompt + output the workload can draw (850)"},
		{"max_model_len: 4096", "max_model_len: 849", "s.yaml:8: field engine.max_model_len: 849 is less than the longest prompt + output the workload can draw (850)"},
		{"kind: sessions", "kind: trace\n  path: t.jsonl\n  hash_block_tokens: -4", "s.yaml:12: field workload.hash_block_tokens: must be in 1..2147483647 (0: the format's), got -4"},
	} {
		y := strings.Replace(sessionsYAML, c.from, c.to, 1)
		_, err := Parse([]byte(y), "s.yaml", nil)
		if c.to == "max_model_len: 850" {
			// 100 + 3 × (200 + 50) = 850 tokens fit exactly.
			if err != nil {
				t.Errorf("max_model_len 850: %v", err)
			}
			continue
		}
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %s", c.to, err, c.want)
		}
	}
}

// The shared-prefix built-ins load, and their traces are the embedded ones.
func TestPrefixBuiltinsLoad(t *testing.T) {
	for _, n := range []string{"mooncake-attention", "mooncake-hybrid", "rollouts-shared-prefix", "sessions-chat"} {
		sc, err := Load(n, nil)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if sc.Workload.Kind == "trace" && sc.Workload.FS == nil {
			t.Errorf("%s: trace %s not embedded", n, sc.Workload.Path)
		}
	}
}
