package setup_test

import (
	"strings"
	"testing"

	"statesim/sched"
	"statesim/setup"
)

func withRunner(version, runner string) string {
	s := strings.Replace(good, "  vllm_version: v0.14\n", "  vllm_version: "+version+"\n", 1)
	if runner != "" {
		s = strings.Replace(s, "  vllm_version: "+version+"\n", "  vllm_version: "+version+"\n  model_runner: "+runner+"\n", 1)
	}
	return s
}

// The default runner follows the release (V2 from v0.29.0, #53183); a set
// value wins; #53059 is flagged as inert under V2 only.
func TestModelRunnerDefaultPerRelease(t *testing.T) {
	for _, c := range []struct {
		version, runner string
		want            sched.Runner
	}{
		{"v0.14", "", sched.RunnerV1}, {"v0.28", "", sched.RunnerV1}, {"v0.29", "", sched.RunnerV2},
		{"v0.30", "", sched.RunnerV2}, {"v0.31", "", sched.RunnerV2}, {"fixed", "", sched.RunnerV2},
		{"v0.31", "v1", sched.RunnerV1}, {"v0.22", "v2", sched.RunnerV2}, {"v0", "", sched.RunnerV1},
	} {
		st, err := setup.Parse([]byte(withRunner(c.version, c.runner)), "t.yaml", nil)
		if err != nil {
			t.Fatalf("%s %q: %v", c.version, c.runner, err)
		}
		if got := st.Runner; got != c.want {
			t.Errorf("%s model_runner %q: runner %s, want %s", c.version, c.runner, got, c.want)
		}
	}
	for _, c := range []struct {
		runner string
		inert  bool
	}{{"", true}, {"v2", true}, {"v1", false}} {
		y := strings.Replace(withRunner("v0.31", c.runner), "  vllm_version: v0.31\n", "  vllm_version: v0.31\n  patches: [+53059]\n", 1)
		st, err := setup.Parse([]byte(y), "t.yaml", nil)
		if err != nil {
			t.Fatal(err)
		}
		if st.GuardIgnored != c.inert {
			t.Errorf("v0.31+53059 model_runner %q: GuardIgnored %v, want %v", c.runner, st.GuardIgnored, c.inert)
		}
		if flag, err := setup.GuardIgnored("v0.31", c.runner, []string{"+53059"}); err != nil || flag != c.inert {
			t.Errorf("v0.31+53059 model_runner %q given alone: %v, %v; want %v", c.runner, flag, err, c.inert)
		}
	}
}

// Bad runners are file:line: field: problem.
func TestModelRunnerErrorsNameFileLineAndField(t *testing.T) {
	for _, c := range []struct{ version, runner, want string }{
		{"v0.31", "v3", `t.yaml:5: field engine.model_runner: unknown model_runner "v3" (known: v1, v2)`},
		{"v0", "v1", "t.yaml:5: field engine.model_runner: the v0 control has no V1 engine model runner"},
	} {
		_, err := setup.Parse([]byte(withRunner(c.version, c.runner)), "t.yaml", nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: want %q, got %v", c.version, c.runner, c.want, err)
		}
	}
}
