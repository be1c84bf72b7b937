package prop

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzSummaryParse: any bytes are a summary that check merge can index
// (its shard within the campaign, one verdict per property, a
// counterexample a plain file name) or an error naming the file; never
// a panic.
func FuzzSummaryParse(f *testing.F) {
	f.Add([]byte(`{"campaign":{"base_seed":5,"shards":3,"trials":10,"max_shrinks":1000,"backend":"symbolic","properties":["stale-slot-read"],"config":{}},"shard":1,"seed":6,"verdict":"found","properties":[{"property":"stale-slot-read","status":"FAIL","scenarios":4,"counterexample":"stale-slot-read.yaml","shrinks":3,"detail":"x"}]}`))
	f.Add([]byte(`{"campaign":{"shards":1,"properties":["conservation"]},"shard":0,"seed":0,"verdict":"clean","properties":[{"property":"conservation","status":"ok","scenarios":5}]}`))
	f.Add([]byte(`{"campaign":{"shards":0},"shard":-1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := parseSummary(data, "dir/check.json")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "dir/check.json: ") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		if s.Shard < 0 || s.Shard >= s.Campaign.Shards || len(s.Properties) != len(s.Campaign.Properties) {
			t.Fatalf("accepted shard %d of %d, %d verdicts for %d properties", s.Shard, s.Campaign.Shards, len(s.Properties), len(s.Campaign.Properties))
		}
		for _, v := range s.Properties {
			if v.Status == "FAIL" && strings.ContainsAny(v.Counterexample, "/") {
				t.Fatalf("accepted counterexample path %q", v.Counterexample)
			}
		}
	})
}

// The merge names the first setting two shards' searches differ in.
func TestJSONDiff(t *testing.T) {
	for _, c := range []struct{ a, b, want string }{
		{`{"trials":100,"config":{"Versions":["v0.13"]}}`, `{"trials":50,"config":{"Versions":["v0.13"]}}`, "trials: 100 vs 50"},
		{`{"trials":1,"config":{"MaxBits":64,"Versions":["v0.13"]}}`, `{"trials":1,"config":{"MaxBits":64,"Versions":["v0.22"]}}`, `config.Versions: ["v0.13"] vs ["v0.22"]`},
		{`{"sets":["a=1"]}`, `{}`, `sets: ["a=1"] vs absent`},
	} {
		if got := jsonDiff([]byte(c.a), []byte(c.b)); got != c.want {
			t.Errorf("jsonDiff(%s, %s) = %q, want %q", c.a, c.b, got, c.want)
		}
	}
}

// MergeSummaries adds each property's scenarios over the shards that
// checked it, keeps every counterexample with its shard's directory, and
// counts the shards that could not check a property (another build).
func TestMergeSummaries(t *testing.T) {
	root := t.TempDir()
	c := Campaign{BaseSeed: 7, Shards: 3, Trials: 10, MaxShrinks: 1000, Backend: "mock", Properties: []string{"conservation", "logprobs-match-reference"}}
	shards := []Summary{
		{Campaign: c, Shard: 0, Seed: 7, Verdict: "clean", Properties: []Verdict{{"conservation", "ok", 10, "", 0, ""}, {"logprobs-match-reference", "ok", 10, "", 0, ""}}},
		{Campaign: c, Shard: 1, Seed: 8, Verdict: "found", Properties: []Verdict{{"conservation", "FAIL", 4, "conservation.yaml", 9, "lost"}, {"logprobs-match-reference", "skipped", 1, "", 0, "no GPU"}}},
		{Campaign: c, Shard: 2, Seed: 9, Verdict: "clean", Properties: []Verdict{{"conservation", "ok", 10, "", 0, ""}, {"logprobs-match-reference", "ok", 10, "", 0, ""}}},
	}
	for _, s := range shards {
		if _, err := WriteSummary(filepath.Join(root, fmt.Sprintf("seed-%d", s.Seed)), &s); err != nil {
			t.Fatal(err)
		}
	}
	m, err := MergeSummaries([]string{root})
	if err != nil {
		t.Fatal(err)
	}
	cons, lp := m.Properties[0], m.Properties[1]
	if cons.Scenarios != 24 || len(cons.Failures) != 1 || cons.Failures[0].Seed != 8 || cons.Failures[0].File != filepath.Join(root, "seed-8", "conservation.yaml") {
		t.Errorf("conservation: %+v", cons)
	}
	if lp.Scenarios != 20 || lp.Skipped != 1 || lp.Detail != "no GPU" || len(lp.Failures) != 0 {
		t.Errorf("logprobs: %+v", lp)
	}
	if m.Found() != 1 {
		t.Errorf("Found() = %d, want 1", m.Found())
	}
	// A summary whose verdict contradicts its properties is refused.
	shards[0].Verdict = "found"
	if _, err := WriteSummary(filepath.Join(root, "seed-7"), &shards[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := MergeSummaries([]string{root}); err == nil || !strings.Contains(err.Error(), `verdict "found", but its properties say clean`) {
		t.Errorf("contradictory verdict: %v", err)
	}
}
