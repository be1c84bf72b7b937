package prop

import (
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
