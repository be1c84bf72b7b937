package sched

import (
	"reflect"
	"testing"

	"statesim/model"
	"statesim/sim"
	"statesim/statecache"
)

func steadyTwin(t *testing.T) *Scheduler {
	t.Helper()
	s := newTestSched(t, Config{MaxNumBatchedTokens: 64, MaxNumSeqs: 8, MaxModelLen: 200, EnableChunkedPrefill: true}, V022, 64)
	addReq(s, 0, 20, 40)
	addReq(s, 1, 7, 90)
	addReq(s, 2, 40, 30)
	addReq(s, 3, 150, 100) // stopped by max_model_len
	return s
}

// What SteadySteps allows is what stepping does. Two identical schedulers
// run a few requests to the end; wherever SteadySteps allows k steps, one
// schedules and applies them one by one, the other calls AdvanceSteady(k):
// each of those steps must schedule the last one's rows one token further
// and finish nothing, and the two must then agree on everything (output,
// requests, counters). The stretches end on all three bounds: a block
// boundary, max_tokens and max_model_len.
func TestAdvanceSteadyIsStepping(t *testing.T) {
	a, b := steadyTwin(t), steadyTwin(t)
	var now sim.Time
	stretches := 0
	ends := map[string]bool{}
	for a.HasUnfinished() {
		if k := a.SteadySteps(); k > 0 {
			if kb := b.SteadySteps(); kb != k {
				t.Fatalf("twins disagree: %d vs %d steady steps", k, kb)
			}
			stretches++
			now = stepSteady(t, a, b, k, now, ends)
			continue
		}
		for _, s := range []*Scheduler{a, b} {
			out, err := s.Schedule(now)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Update(out, now+10); err != nil {
				t.Fatal(err)
			}
		}
		now += 10
	}
	if stretches < 5 || !ends["block"] || !ends["max_tokens"] || !ends["max_model_len"] {
		t.Errorf("%d stretches, ended by %v: the example should reach every bound", stretches, ends)
	}
}

// stepSteady steps a k times and advances b by k, and compares them.
func stepSteady(t *testing.T, a, b *Scheduler, k int, now sim.Time, ends map[string]bool) sim.Time {
	t.Helper()
	prev := append([]Row(nil), a.Out().Rows...)
	start := now
	for j := 0; j < k; j++ {
		start = now
		out, err := a.Schedule(now)
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Rows) != len(prev) || len(out.Preempted) > 0 {
			t.Fatalf("steady step %d of %d: %d rows (want %d), %d preempted", j+1, k, len(out.Rows), len(prev), len(out.Preempted))
		}
		for i := range out.Rows {
			got, want := out.Rows[i], prev[i]
			want.NumComputed++
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("steady step %d of %d, row %d: %+v, want %+v", j+1, k, i, got, want)
			}
		}
		prev = append(prev[:0], out.Rows...)
		fin, err := a.Update(out, now+10)
		if err != nil {
			t.Fatal(err)
		}
		if len(fin) > 0 {
			t.Fatalf("steady step %d of %d finished request %d", j+1, k, fin[0].ID)
		}
		now += 10
	}
	b.AdvanceSteady(k, start, now)
	if !reflect.DeepEqual(a.Out(), b.Out()) {
		t.Fatalf("outputs differ:\n%+v\n%+v", b.Out(), a.Out())
	}
	if a.step != b.step || a.stamp != b.stamp || a.Now != b.Now {
		t.Fatalf("step %d stamp %d now %d, want %d %d %d", b.step, b.stamp, b.Now, a.step, a.stamp, a.Now)
	}
	for i := range a.Running {
		ra, rb := *a.Running[i], *b.Running[i]
		if !reflect.DeepEqual(ra.Blocks.Attn, rb.Blocks.Attn) || ra.Blocks.Covered() != rb.Blocks.Covered() {
			t.Fatalf("request %d: blocks differ", ra.ID)
		}
		ra.Blocks = rb.Blocks // tables of two managers
		if !reflect.DeepEqual(ra, rb) {
			t.Fatalf("request %d differs:\n%+v\n%+v", ra.ID, rb, ra)
		}
		// What ended the stretch: the next step needs a block or finishes.
		switch c := ra.NumComputedTokens; {
		case c+1 > ra.Blocks.Covered():
			ends["block"] = true
		case ra.NumOutputTokens+1 >= ra.MaxTokens:
			ends["max_tokens"] = true
		case ra.NumTokens()+1 >= a.Cfg.MaxModelLen:
			ends["max_model_len"] = true
		}
	}
	return now
}

// Anything that can change the next step ends the stretch: a request
// waiting, another policy, a row of a request with no state yet.
func TestSteadyStepsRefuses(t *testing.T) {
	cfg := Config{MaxNumBatchedTokens: 64, MaxNumSeqs: 8, MaxModelLen: 200, EnableChunkedPrefill: true}
	a := newTestSched(t, cfg, V022, 64)
	addReq(a, 0, 20, 40)
	out, _ := a.Schedule(0)
	a.Update(out, 10)
	out, _ = a.Schedule(10)
	a.Update(out, 20)
	if k := a.SteadySteps(); k == 0 {
		t.Fatal("no steady step after a decode")
	}
	addReq(a, 9, 5, 5)
	if k := a.SteadySteps(); k != 0 {
		t.Errorf("%d steady steps with a request waiting", k)
	}
	a.Waiting = a.Waiting[:0]
	a.Policy = V0Policy{}
	if k := a.SteadySteps(); k != 0 {
		t.Errorf("%d steady steps under another policy", k)
	}
	// A new 1-token prompt decodes at v0.13 (bug A) but has no state: its
	// row is not a steady decode.
	d := newTestSched(t, cfg, V013, 64)
	addReq(d, 0, 1, 10)
	out, _ = d.Schedule(0)
	if k := d.SteadySteps(); k != 0 || out.NumDecodes != 1 {
		t.Errorf("%d steady steps after a new request's step (%d decodes)", k, out.NumDecodes)
	}
}

// mambaTwin is a scheduler over a tiny hybrid with prefix caching under
// Mamba cache mode mode: a state block per 16 tokens, hits on a shared
// 48-token prefix.
func mambaTwin(t *testing.T, mode statecache.MambaCacheMode) *Scheduler {
	t.Helper()
	sh, err := model.Preset("tiny-hybrid")
	if err != nil {
		t.Fatal(err)
	}
	l := sh.Layout(16)
	kv, err := statecache.NewKVCacheManagerWith(&l, 400, statecache.ManagerOptions{EnablePrefixCaching: true, MambaCacheMode: mode})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{MaxNumBatchedTokens: 64, MaxNumSeqs: 8, MaxModelLen: 400, EnableChunkedPrefill: true}
	if mode == statecache.MambaAlign {
		cfg.MambaAlignBlockSize = 16
	}
	s := New(cfg, kv, V022, nil)
	s.HashBlocks = func(r *Request, bs int) {
		parent := statecache.NoneHash
		if n := len(r.BlockHashes); n > 0 {
			parent = r.BlockHashes[n-1]
		}
		for i := len(r.BlockHashes); (i+1)*bs <= r.NumTokens(); i++ {
			id := uint64(i)
			if (i+1)*bs > 48 {
				id = uint64(r.ID+1)<<32 | uint64(i)
			}
			parent = statecache.HashBlockContent(parent, id)
			r.BlockHashes = append(r.BlockHashes, parent)
		}
	}
	addReq(s, 0, 60, 70)
	addReq(s, 1, 50, 45)
	addReq(s, 2, 70, 100)
	addReq(s, 3, 33, 60)
	return s
}

// Under align and all, what SteadySteps allows (MambaSteady's bound) is
// what stepping does to every Mamba table: twins run the requests to the
// end, one stepping each allowed stretch, the other advancing it in bulk
// and caching its last step (CacheSteady); every table (blocks, cached
// count, copy source, token counts), the pool's free count and the
// cached-block count must then agree. A stretch that let a step free the
// block behind a boundary, release align's copy source, grow a table or
// cache early would leave the bulk twin's tables behind.
func TestAdvanceSteadyMambaModesIsStepping(t *testing.T) {
	for _, mode := range []statecache.MambaCacheMode{statecache.MambaAll, statecache.MambaAlign} {
		a, b := mambaTwin(t, mode), mambaTwin(t, mode)
		var now sim.Time
		stretches, steps := 0, 0
		for a.HasUnfinished() {
			if k := a.SteadySteps(); k > 0 {
				if kb := b.SteadySteps(); kb != k {
					t.Fatalf("%v: twins disagree: %d vs %d steady steps", mode, k, kb)
				}
				stretches++
				steps += k
				start := now
				for j := 0; j < k; j++ {
					start = now
					out, err := a.Schedule(now)
					if err != nil {
						t.Fatal(err)
					}
					if _, err := a.Update(out, now+10); err != nil {
						t.Fatal(err)
					}
					now += 10
				}
				b.AdvanceSteady(k, start, now)
				if err := b.CacheSteady(); err != nil {
					t.Fatal(err)
				}
				for i := range a.Running {
					ta, tb := a.Running[i].Blocks.MambaT, b.Running[i].Blocks.MambaT
					if !reflect.DeepEqual(ta, tb) {
						t.Fatalf("%v: request %d's Mamba tables after %d steady steps:\n%+v\nstepped:\n%+v", mode, a.Running[i].ID, k, tb, ta)
					}
				}
				if a.KV.Pool.NumFree() != b.KV.Pool.NumFree() || a.KV.Pool.NumCachedBlocks() != b.KV.Pool.NumCachedBlocks() {
					t.Fatalf("%v: pool free %d cached %d after bulk, stepped %d %d", mode, b.KV.Pool.NumFree(), b.KV.Pool.NumCachedBlocks(),
						a.KV.Pool.NumFree(), a.KV.Pool.NumCachedBlocks())
				}
				continue
			}
			for _, s := range []*Scheduler{a, b} {
				out, err := s.Schedule(now)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := s.Update(out, now+10); err != nil {
					t.Fatal(err)
				}
			}
			now += 10
		}
		if stretches < 5 || steps < 50 {
			t.Errorf("%v: %d stretches, %d steps: the example should reach steady decodes", mode, stretches, steps)
		}
	}
}
