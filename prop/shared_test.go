package prop_test

import (
	"fmt"
	"os"
	"runtime/debug"
	"sync"
	"testing"

	"statesim/internal/testtier"
	"statesim/prop"
)

// TestMain removes the shared searches' runner directories. It also
// collects garbage at 4× the live heap, not 2× (unless $GOGC says
// otherwise): the searches allocate fast over a live heap of a few tens
// of MB, so the collector ran often for little; it trades memory for CPU
// (docs/performance.md, "Design choices measured").
func TestMain(m *testing.M) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	testtier.MemoryTempDir()
	code := m.Run()
	shared.mu.Lock()
	for _, d := range shared.dirs {
		os.RemoveAll(d)
	}
	shared.mu.Unlock()
	os.Exit(code)
}

// sharedTrials caps every shared search: the most any caller asks for.
const sharedTrials = 2000

// shared memoises searches that several tests run alike (one config,
// property and seed): the first caller runs it, the others wait for its
// result. A search is deterministic, so each caller gets what its own
// search would have found.
var shared struct {
	mu    sync.Mutex
	byKey map[string]*sharedSearch
	dirs  []string
}

type sharedSearch struct {
	once sync.Once
	res  prop.Result
	err  error
}

// searchShared is search for a search other tests run too. A caller
// asking for fewer trials than the counterexample took gets what its own
// search would have returned: the property held over its trials.
func searchShared(t testing.TB, c prop.Config, p prop.Property, seed int64, trials int) prop.Result {
	t.Helper()
	if trials > sharedTrials {
		t.Fatalf("a shared search runs at most %d trials, not %d", sharedTrials, trials)
	}
	key := fmt.Sprintf("%+v|%s|%d", c, p.Name, seed)
	shared.mu.Lock()
	if shared.byKey == nil {
		shared.byKey = map[string]*sharedSearch{}
	}
	s := shared.byKey[key]
	if s == nil {
		s = &sharedSearch{}
		shared.byKey[key] = s
	}
	shared.mu.Unlock()
	s.once.Do(func() {
		dir, err := prop.TempDir()
		if err != nil {
			s.err = err
			return
		}
		shared.mu.Lock()
		shared.dirs = append(shared.dirs, dir)
		shared.mu.Unlock()
		s.res, s.err = prop.Check(prop.NewRunner(dir, nil), c, p, prop.Options{Seed: seed, Trials: sharedTrials})
	})
	if s.err != nil {
		t.Fatalf("seed %d: %v", seed, s.err)
	}
	res := s.res
	if !res.Holds && res.Trials > trials {
		return prop.Result{Property: res.Property, Seed: res.Seed, Holds: true, Trials: trials}
	}
	if res.Holds {
		res.Trials = trials
	}
	return res
}
