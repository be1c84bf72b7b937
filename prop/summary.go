package prop

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"statesim/internal/infile"
	"statesim/internal/outfile"
)

// SummaryName is the file a check run writes into its --out directory
// when its search ends: its absence means the run did not finish.
const SummaryName = "check.json"

// maxSummaryBytes bounds a summary read back (a few KiB: one line per
// property).
const maxSummaryBytes = 1 << 20

// Campaign is what every shard of one check campaign shares: the search
// as settled (the generator's bounds, the properties, the budget, the
// --set overrides) and the seeds it covers. Shards merge only when their
// campaigns are equal, so two runs whose flags settle differently never
// add up.
type Campaign struct {
	BaseSeed   int64    `json:"base_seed"` // shard 0's seed; shard i searches BaseSeed + i
	Shards     int      `json:"shards"`
	Trials     int      `json:"trials"`
	MaxShrinks int      `json:"max_shrinks"`
	Backend    string   `json:"backend"`
	Properties []string `json:"properties"`
	Sets       []string `json:"sets,omitempty"`
	Config     Config   `json:"config"`
}

// Summary is one check run's verdict (OUT/check.json). Every field is a
// function of the flags and the seed, never of the machine or the clock.
type Summary struct {
	Campaign   Campaign  `json:"campaign"`
	Shard      int       `json:"shard"`
	Seed       int64     `json:"seed"`
	Verdict    string    `json:"verdict"` // clean, or found
	Properties []Verdict `json:"properties"`
}

// Verdict is one property's outcome in a summary.
type Verdict struct {
	Property string `json:"property"`
	Status   string `json:"status"` // ok, FAIL, skipped
	// Scenarios is how many scenarios were generated, the counterexample
	// included.
	Scenarios int `json:"scenarios"`
	// Counterexample is the shrunk scenario's file, relative to the
	// summary's directory.
	Counterexample string `json:"counterexample,omitempty"`
	Shrinks        int    `json:"shrinks,omitempty"`
	// Detail is the failure on the shrunk scenario, or why the property
	// was skipped.
	Detail string `json:"detail,omitempty"`
}

// NewSummary starts the summary of shard of shards (0 of 1 unsharded)
// of the search s settled from p, which searches p.Seed.
func NewSummary(p *Plan, s *Search, sets []string, shard, shards int) *Summary {
	c := Campaign{BaseSeed: p.Seed - int64(shard), Shards: max(1, shards), Trials: s.Options.Trials,
		MaxShrinks: s.Options.MaxShrinks, Backend: p.Backend, Sets: sets, Config: s.Config}
	for _, pr := range s.Properties {
		c.Properties = append(c.Properties, pr.Name)
	}
	return &Summary{Campaign: c, Shard: shard, Seed: p.Seed, Verdict: "clean"}
}

// Add records a property's result; counterexample is its file's name in
// the summary's directory when it failed.
func (s *Summary) Add(res Result, counterexample string) {
	v := Verdict{Property: res.Property, Scenarios: res.Trials}
	switch {
	case res.Unavailable:
		v.Status, v.Detail = "skipped", res.Err.Error()
	case res.Holds:
		v.Status = "ok"
	default:
		v.Status, v.Counterexample, v.Shrinks = "FAIL", counterexample, res.Shrinks
		v.Detail = oneLine(res.Err.Error())
		s.Verdict = "found"
	}
	s.Properties = append(s.Properties, v)
}

// WriteSummary writes s to dir/check.json whole or not at all.
func WriteSummary(dir string, s *Summary) (string, error) {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, SummaryName)
	return p, outfile.WriteAtomic(p, append(b, '\n'))
}

// ShardSummary is a summary read back, with the directory it came from.
type ShardSummary struct {
	Dir string
	Summary
}

// Merged is a campaign's verdict over all its shards.
type Merged struct {
	Campaign   Campaign
	Shards     []ShardSummary // by shard index
	Properties []MergedVerdict
}

// MergedVerdict is one property over every shard.
type MergedVerdict struct {
	Property string
	// Scenarios is the total generated over the shards that checked it.
	Scenarios int
	// Skipped counts the shards that could not check it (Detail: why).
	Skipped  int
	Detail   string
	Failures []Failure // by seed
}

// Failure is one shard's counterexample.
type Failure struct {
	Seed     int64
	Scenario int    // the counterexample's number among the generated
	File     string // its path, under the shard's directory
	Shrinks  int
	Detail   string
}

// Found counts the properties with a counterexample.
func (m *Merged) Found() int {
	n := 0
	for _, v := range m.Properties {
		if len(v.Failures) > 0 {
			n++
		}
	}
	return n
}

// MergeSummaries reads the summaries under dirs (each a shard's
// directory holding check.json, or a campaign's --out holding seed-S/
// directories) and merges them. Every error is bad input: a directory
// with no summary, shards of different campaigns (naming the first
// setting that differs), a seed twice, or a seed of the campaign in none.
func MergeSummaries(dirs []string) (*Merged, error) {
	var all []ShardSummary
	for _, d := range dirs {
		ss, err := readSummaries(d)
		if err != nil {
			return nil, err
		}
		all = append(all, ss...)
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("no directories given")
	}
	first := all[0]
	want, _ := json.Marshal(first.Campaign)
	for _, s := range all[1:] {
		got, _ := json.Marshal(s.Campaign)
		if !bytes.Equal(want, got) {
			return nil, fmt.Errorf("%s and %s are shards of different searches (%s): run every shard with the same flags", summaryPath(first.Dir), summaryPath(s.Dir), jsonDiff(want, got))
		}
	}
	c := first.Campaign
	byShard := make([]*ShardSummary, c.Shards)
	for i := range all {
		s := &all[i]
		if prev := byShard[s.Shard]; prev != nil {
			return nil, fmt.Errorf("seed %d (shard %d/%d) is in both %s and %s: give each shard once", s.Seed, s.Shard, c.Shards, prev.Dir, s.Dir)
		}
		byShard[s.Shard] = s
	}
	var missing []string
	for i, s := range byShard {
		if s == nil {
			missing = append(missing, fmt.Sprintf("seed %d (shard %d/%d)", c.BaseSeed+int64(i), i, c.Shards))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%d of %d shards have no %s in the directories given (missing, or their search has not finished): %s",
			len(missing), c.Shards, SummaryName, strings.Join(missing, ", "))
	}
	m := &Merged{Campaign: c}
	for _, name := range c.Properties {
		m.Properties = append(m.Properties, MergedVerdict{Property: name})
	}
	for _, s := range byShard {
		m.Shards = append(m.Shards, *s)
		for i, v := range s.Properties {
			mv := &m.Properties[i]
			switch v.Status {
			case "skipped":
				mv.Skipped++
				mv.Detail = v.Detail
				continue
			case "FAIL":
				mv.Failures = append(mv.Failures, Failure{Seed: s.Seed, Scenario: v.Scenarios,
					File: filepath.Join(s.Dir, v.Counterexample), Shrinks: v.Shrinks, Detail: v.Detail})
			}
			mv.Scenarios += v.Scenarios
		}
	}
	return m, nil
}

func summaryPath(dir string) string { return filepath.Join(dir, SummaryName) }

// readSummaries reads dir/check.json, or else dir/seed-*/check.json.
func readSummaries(dir string) ([]ShardSummary, error) {
	if _, err := os.Stat(summaryPath(dir)); err == nil {
		s, err := readSummary(dir)
		return []ShardSummary{s}, err
	}
	subs, _ := filepath.Glob(filepath.Join(dir, "seed-*", SummaryName))
	if len(subs) == 0 {
		return nil, fmt.Errorf("%s: no %s in it or in a seed-S directory under it: not a check --out directory, or no search there has finished", dir, SummaryName)
	}
	var out []ShardSummary
	for _, p := range subs {
		s, err := readSummary(filepath.Dir(p))
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// readSummary reads and checks one shard's summary.
func readSummary(dir string) (ShardSummary, error) {
	p := summaryPath(dir)
	b, err := infile.ReadFile(p, "check summary", maxSummaryBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return ShardSummary{}, fmt.Errorf("%s: no %s", dir, SummaryName)
	}
	if err != nil {
		return ShardSummary{}, err
	}
	s, err := parseSummary(b, p)
	return ShardSummary{Dir: dir, Summary: s}, err
}

// parseSummary decodes a summary and checks that it is one check run's:
// its shard within the campaign, its seed the shard's, one verdict per
// property in order, a counterexample a file beside it. Errors name file.
func parseSummary(b []byte, file string) (Summary, error) {
	var s Summary
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return s, fmt.Errorf("%s: not a check summary: %v", file, err)
	}
	if dec.More() {
		return s, fmt.Errorf("%s: not a check summary: data after its JSON object", file)
	}
	c := s.Campaign
	switch {
	case c.Shards < 1 || s.Shard < 0 || s.Shard >= c.Shards:
		return s, fmt.Errorf("%s: shard %d of %d: want 0 <= shard < shards", file, s.Shard, c.Shards)
	case s.Seed != c.BaseSeed+int64(s.Shard):
		return s, fmt.Errorf("%s: seed %d is not base_seed %d + shard %d", file, s.Seed, c.BaseSeed, s.Shard)
	case len(s.Properties) != len(c.Properties):
		return s, fmt.Errorf("%s: %d property verdicts for %d properties", file, len(s.Properties), len(c.Properties))
	}
	found := false
	for i, v := range s.Properties {
		if v.Property != c.Properties[i] {
			return s, fmt.Errorf("%s: properties[%d] is %q, want %q", file, i, v.Property, c.Properties[i])
		}
		if !slices.Contains([]string{"ok", "FAIL", "skipped"}, v.Status) {
			return s, fmt.Errorf("%s: properties[%d].status %q: want ok, FAIL or skipped", file, i, v.Status)
		}
		if v.Scenarios < 0 {
			return s, fmt.Errorf("%s: properties[%d].scenarios %d: want 0 or more", file, i, v.Scenarios)
		}
		if v.Status == "FAIL" {
			found = true
			if ce := v.Counterexample; ce == "" || ce != filepath.Base(ce) || ce == "." || ce == ".." {
				return s, fmt.Errorf("%s: properties[%d].counterexample %q: want the name of a file beside it", file, i, ce)
			}
		}
	}
	if want := map[bool]string{false: "clean", true: "found"}[found]; s.Verdict != want {
		return s, fmt.Errorf("%s: verdict %q, but its properties say %s", file, s.Verdict, want)
	}
	return s, nil
}

// jsonDiff names the first field (in key order, nested objects entered)
// where two JSON objects differ, with both values.
func jsonDiff(a, b []byte) string {
	var ma, mb map[string]json.RawMessage
	if json.Unmarshal(a, &ma) != nil || json.Unmarshal(b, &mb) != nil {
		return fmt.Sprintf("%s vs %s", a, b)
	}
	keys := make([]string, 0, len(ma)+len(mb))
	for k := range ma {
		keys = append(keys, k)
	}
	for k := range mb {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range slices.Compact(keys) {
		va, vb := ma[k], mb[k]
		if bytes.Equal(va, vb) {
			continue
		}
		if len(va) > 0 && va[0] == '{' && len(vb) > 0 && vb[0] == '{' {
			return k + "." + jsonDiff(va, vb)
		}
		return fmt.Sprintf("%s: %s vs %s", k, orAbsent(va), orAbsent(vb))
	}
	return "no difference"
}

func orAbsent(v json.RawMessage) string {
	if len(v) == 0 {
		return "absent"
	}
	return string(v)
}
