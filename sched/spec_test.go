package sched

import (
	"math/rand/v2"
	"testing"

	"statesim/model"
	"statesim/statecache"
)

// A decode row under K drafts is scheduled 1 + K tokens; the sampler's
// accepted count decides how many come off num_computed_tokens and how
// many tokens the request gains, and the next step continues from state
// column a.
func TestSpecDecodeSchedulesDraftsAndSubtractsRejected(t *testing.T) {
	s := newTestSched(t, Config{MaxNumBatchedTokens: 100, MaxNumSeqs: 4, MaxModelLen: 1000, EnableChunkedPrefill: true}, Fixed, 64)
	s.Spec = Spec{Method: SpecMTP, K: 3, Accept: Acceptance{Fixed: 1}}
	r := addReq(s, 0, 10, 50)
	out, err := s.Schedule(0)
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, out, []rowWant{{0, 10, 0}})
	if _, err := s.Update(out, 1); err != nil {
		t.Fatal(err)
	}
	if r.NumOutputTokens != 1 || r.NumDrafts != 3 || r.AcceptedColumn() != 0 {
		t.Fatalf("after the prefill: %d outputs, %d drafts, column %d; want 1, 3, 0", r.NumOutputTokens, r.NumDrafts, r.AcceptedColumn())
	}
	out, err = s.Schedule(1)
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, out, []rowWant{{0, 4, 10}})
	if d := out.Rows[0].NumDrafts; d != 3 {
		t.Fatalf("decode row carries %d drafts, want 3", d)
	}
	if _, err := s.Update(out, 2); err != nil {
		t.Fatal(err)
	}
	// 1 of 3 accepted: 2 rejected come off 14; 2 tokens gained.
	if r.NumComputedTokens != 12 || r.NumOutputTokens != 3 || r.AcceptedColumn() != 1 || out.Rows[0].NumAccepted != 1 {
		t.Fatalf("after the decode: computed %d, outputs %d, column %d, accepted %d; want 12, 3, 1, 1",
			r.NumComputedTokens, r.NumOutputTokens, r.AcceptedColumn(), out.Rows[0].NumAccepted)
	}
}

// A budget too small for every draft trims the drafts, not the token.
func TestSpecDraftsTrimmedByBudget(t *testing.T) {
	s := newTestSched(t, Config{MaxNumBatchedTokens: 2, MaxNumSeqs: 4, MaxModelLen: 1000, EnableChunkedPrefill: true}, Fixed, 64)
	s.Spec = Spec{Method: SpecNgram, K: 3, Accept: Acceptance{Fixed: 3}}
	r := addReq(s, 0, 2, 50)
	out, _ := s.Schedule(0)
	s.Update(out, 1)
	out, _ = s.Schedule(1)
	if out.Rows[0].NumScheduled != 2 || out.Rows[0].NumDrafts != 1 {
		t.Fatalf("scheduled %d with %d drafts, want 2 with 1", out.Rows[0].NumScheduled, out.Rows[0].NumDrafts)
	}
	s.Update(out, 2)
	if r.NumComputedTokens != 4 || r.NumOutputTokens != 3 {
		t.Fatalf("computed %d, outputs %d; want 4, 3", r.NumComputedTokens, r.NumOutputTokens)
	}
}

// The per-token acceptance stops at the first rejection, and the fixed
// count is capped at the drafts.
func TestAcceptanceModels(t *testing.T) {
	s := Spec{K: 4, Accept: Acceptance{Fixed: 9}}
	if a := s.accepted(3); a != 3 {
		t.Errorf("fixed 9 of 3 drafts: %d", a)
	}
	s = Spec{K: 4, Accept: Acceptance{Fixed: -1, Rate: 0.5}, Rand: rand.New(rand.NewPCG(1, 2))}
	var hist [5]int
	for i := 0; i < 4000; i++ {
		hist[s.accepted(4)]++
	}
	// Geometric: about half stop at 0, a quarter at 1, ...; 4 is 1/16.
	if hist[0] < 1800 || hist[0] > 2200 || hist[4] < 180 || hist[4] > 320 {
		t.Errorf("rate 0.5 histogram %v", hist)
	}
	s.Accept.Rate = 0
	if a := s.accepted(4); a != 0 {
		t.Errorf("rate 0 accepted %d", a)
	}
}

// The runner's threshold is the minimum over groups: an MTP or EAGLE
// drafter's attention group pulls it to 1 (#55894) unless #55898 lets the
// stateful builders' 1 + K win; ngram has no drafter group.
func TestRunnerThresholdAcrossGroups(t *testing.T) {
	fix, err := Patched(V031, []string{"+55898"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		v       Version
		m       SpecMethod
		runner  int
		builder int
	}{
		{V031, SpecMTP, 1, 4}, {V031, SpecEAGLE, 1, 4}, {V031, SpecNgram, 4, 4}, {fix, SpecMTP, 4, 4}, {V014, SpecMTP, 1, 4},
	} {
		b := c.v.Behaviour()
		got := b.thresholds(&Spec{Method: c.m, K: 3})
		if got.Runner != c.runner || got.Builder != c.builder {
			t.Errorf("%s %s: thresholds %+v, want runner %d builder %d", c.v, c.m, got, c.runner, c.builder)
		}
	}
	b := V031.Behaviour()
	if got := b.thresholds(nil); got.Runner != 1 || got.Builder != 1 {
		t.Errorf("no spec: %+v", got)
	}
}

// #55894's trigger, row by row: a draft-decode row behind a chunked
// prefill's continuing chunk shares its region under the runner's
// threshold 1 and lands on the Mamba prefill path; with #55898 the
// reorder moves it to the front and it decodes.
func TestDraftDecodeBehindChunkTakesPrefillPath(t *testing.T) {
	chunk := &Request{ID: 1, NumPromptTokens: 1000}
	dec := &Request{ID: 2, NumPromptTokens: 10}
	rows := func() []Row {
		return []Row{
			{Req: chunk, NumScheduled: 200, NumComputed: 400},
			{Req: dec, NumScheduled: 4, NumComputed: 11, NumDrafts: 3},
		}
	}
	spec := &Spec{Method: SpecMTP, K: 3}
	rs := rows()
	if nd := ClassifySpec(V031, BuilderMamba2, rs, make([]Row, 0, 2), false, spec); nd != 0 || rs[1].Path != PathPrefill {
		t.Fatalf("v0.31: %d decodes, draft row path %s; want 0 and prefill", nd, rs[1].Path)
	}
	fix := mustPatched(t, V031, "+55898")
	rs = rows()
	if nd := ClassifySpec(fix, BuilderMamba2, rs, make([]Row, 0, 2), false, spec); nd != 1 || rs[0].Req != dec || rs[0].Path != PathDecode {
		t.Fatalf("v0.31+55898: %d decodes, first row %d on %s; want the draft row decoding first", nd, rs[0].Req.ID, rs[0].Path)
	}
	// GDN picks spec rows by mask: the draft row decodes wherever it is.
	rs = rows()
	if nd := ClassifySpec(V031, BuilderGDN, rs, make([]Row, 0, 2), false, spec); nd != 1 || rs[1].Path != PathDecode || rs[0].Path != PathPrefill {
		t.Fatalf("GDN: %d decodes, paths %s %s", nd, rs[0].Path, rs[1].Path)
	}
}

// #35447's trigger: a new prompt of at most 1 + K tokens in a batch of
// draft decodes is a decode under the default-flag split (v0.14), and a
// prefill once #37303 forces is_prefilling rows to prefill (v0.19).
func TestShortNewPromptUnderMTP(t *testing.T) {
	spec := &Spec{Method: SpecMTP, K: 3}
	mk := func() []Row {
		return []Row{
			{Req: &Request{ID: 1, NumPromptTokens: 10}, NumScheduled: 4, NumComputed: 12, NumDrafts: 3},
			{Req: &Request{ID: 2, NumPromptTokens: 3}, NumScheduled: 3, NumComputed: 0},
		}
	}
	for _, c := range []struct {
		v    Version
		path Path
	}{{V014, PathDecode}, {V013, PathDecode}, {V019, PathPrefill}, {V022, PathPrefill}, {V031, PathPrefill}} {
		rs := mk()
		ClassifySpec(c.v, BuilderMamba2, rs, make([]Row, 0, 2), false, spec)
		for _, r := range rs {
			if r.Req.ID == 2 && r.Path != c.path {
				t.Errorf("%s: the new 3-token prompt takes %s, want %s", c.v, r.Path, c.path)
			}
		}
	}
}

// The manager gives each Mamba group 1 + K blocks and frees them all.
func TestSpecColumnsAllocatedAndFreed(t *testing.T) {
	sh, err := model.Preset("jamba-reasoning-3b")
	if err != nil {
		t.Fatal(err)
	}
	l := sh.Layout(16)
	kv, err := statecache.NewKVCacheManagerWith(&l, 1000, statecache.ManagerOptions{NumSpeculativeBlocks: 2})
	if err != nil {
		t.Fatal(err)
	}
	tb := kv.NewTable()
	free := kv.Pool.NumFree()
	if ok, err := kv.Allocate(1, &tb, 20); !ok || err != nil {
		t.Fatal(ok, err)
	}
	nm := len(tb.Mamba)
	want := (20+l.BlockSize-1)/l.BlockSize*len(tb.Attn) + 3*nm
	if got := free - kv.Pool.NumFree(); got != want || tb.NumHeld() != want {
		t.Fatalf("allocated %d (table says %d), want %d", got, tb.NumHeld(), want)
	}
	seen := map[int32]bool{}
	for g := 0; g < nm; g++ {
		for j := 0; j <= 2; j++ {
			b := tb.Column(g, j, 2)
			if b == statecache.NullBlock || seen[b] {
				t.Fatalf("group %d column %d: block %d", g, j, b)
			}
			seen[b] = true
		}
	}
	if err := kv.Free(1, &tb); err != nil || kv.Pool.NumFree() != free {
		t.Fatalf("free: %v, %d free of %d", err, kv.Pool.NumFree(), free)
	}
}

// Speculative steps are never bulk-advanced, even a batch whose drafts
// long_prefill_token_threshold 1 trimmed to nothing (every row one token).
func TestSpecStepsAreNotSteady(t *testing.T) {
	s := newTestSched(t, Config{MaxNumBatchedTokens: 100, MaxNumSeqs: 4, MaxModelLen: 1000, EnableChunkedPrefill: true, LongPrefillTokenThreshold: 1}, Fixed, 64)
	s.Spec = Spec{Method: SpecMTP, K: 2, Accept: Acceptance{Fixed: 1}}
	addReq(s, 0, 1, 50)
	addReq(s, 1, 1, 50)
	for step := 0; step < 3; step++ {
		out, err := s.Schedule(0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Update(out, 1); err != nil {
			t.Fatal(err)
		}
		if n := s.SteadySteps(); n != 0 {
			t.Fatalf("step %d: SteadySteps %d under speculative decoding", step, n)
		}
	}
	s.Spec = Spec{}
	for _, r := range s.Running {
		r.NumDrafts = 0
	}
	for step := 0; step < 2; step++ {
		out, _ := s.Schedule(0)
		s.Update(out, 1)
	}
	if n := s.SteadySteps(); n == 0 {
		t.Fatal("the same batch without speculation is never steady: the test cannot fail")
	}
}
