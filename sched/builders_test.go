package sched

import (
	"slices"
	"testing"

	"statesim/model"
)

// The stateless-first-chunk cases of vLLM's tests for the GDN-family
// builders: tests/models/kimi_k3/test_kda_metadata.py as #51483 lists them
// (the same rule #51565 gives the shared GDN builder). Rows are given as
// seq_lens with every query length 1, as there; the prompt lengths are
// ours (a finished prompt, or one still prefilling for the extend chunk).
// Before the fixes the default-flag split makes every row a decode.
func TestGDNSplitConformance(t *testing.T) {
	type row struct{ seqLen, prompt int }
	for _, c := range []struct {
		name       string
		rows       []row
		before     int // num_decodes before #51565 / #51483
		after      int
		hasInitial []bool // after the fix
	}{
		// test_one_token_first_chunk_is_not_a_decode: seq_lens [100, 50, 1].
		{"one_token_first_chunk_is_not_a_decode", []row{{100, 99}, {50, 49}, {1, 1}}, 3, 2, []bool{true, true, false}},
		// test_one_token_extend_chunk_stays_a_decode: seq_lens [100, 50, 65],
		// the third a one-token chunk of a prompt still being prefilled.
		{"one_token_extend_chunk_stays_a_decode", []row{{100, 99}, {50, 49}, {65, 200}}, 3, 3, []bool{true, true, true}},
	} {
		for _, k := range []Builder{BuilderGDN, BuilderKimiK3KDA} {
			for _, v := range []struct {
				v    Version
				want int
			}{{V022, c.before}, {V031, c.after}} {
				rows := make([]Row, len(c.rows))
				for i, r := range c.rows {
					rows[i] = Row{Req: &Request{ID: RequestID(i), NumPromptTokens: r.prompt}, NumScheduled: 1, NumComputed: r.seqLen - 1}
				}
				if got := ClassifyFor(v.v, k, rows, make([]Row, 0, len(rows)), false); got != v.want {
					t.Errorf("%s, %s builder at %s: num_decodes %d, want %d", c.name, k, v.v, got, v.want)
				}
				if v.v == V031 {
					var init []bool
					for i := range rows {
						init = append(init, rows[i].HasInitialState)
					}
					if !slices.Equal(init, c.hasInitial) {
						t.Errorf("%s, %s builder at %s: has_initial_state %v, want %v", c.name, k, v.v, init, c.hasInitial)
					}
				}
			}
		}
	}
}

// TestSplitPerBuilder: one batch, [decode, new 1-token prompt], under each
// builder and version. The Mamba builders stop the decode run at the new
// row from v0.19 (#37303); the GDN and KDA builders only from v0.31
// (#51565, #51483); V0 never decodes.
func TestSplitPerBuilder(t *testing.T) {
	want := map[Builder][]int{ // num_decodes per version, in table order
		BuilderMamba:     {2, 2, 1, 1, 1, 1, 0},
		BuilderMamba2:    {2, 2, 1, 1, 1, 1, 0},
		BuilderLinear:    {2, 2, 2, 2, 2, 2, 0}, // default flags in every release
		BuilderGDN:       {2, 2, 2, 2, 2, 1, 0},
		BuilderKimiK3KDA: {2, 2, 2, 2, 2, 1, 0},
	}
	for k := Builder(0); k < numBuilders; k++ {
		for v := Version(0); v < numVersions; v++ {
			rows := rowsOf([][3]int{{1, 10, 10}, {1, 0, 1}})
			if got := ClassifyFor(v, k, rows, make([]Row, 0, 2), false); got != want[k][v] {
				t.Errorf("%s builder, %s: num_decodes %d, want %d", k, v, got, want[k][v])
			}
		}
	}
}

func TestBuilderOf(t *testing.T) {
	for k, want := range map[model.StateKind]Builder{
		"": BuilderMamba, model.Mamba1: BuilderMamba, model.Mamba2: BuilderMamba2, model.ShortConv: BuilderMamba,
		model.LinearAttention: BuilderLinear, model.GatedDeltaNet: BuilderGDN,
		model.KDA: BuilderGDN, // Kimi Linear's KDA layers run on the GDN backend (#51562)
	} {
		if got := BuilderOf(k, false); got != want {
			t.Errorf("BuilderOf(%q, false) = %s, want %s", k, got, want)
		}
		// Only KDA layers have a full-rank gate to pick Kimi-K3's builder.
		if k == model.KDA {
			want = BuilderKimiK3KDA
		}
		if got := BuilderOf(k, true); got != want {
			t.Errorf("BuilderOf(%q, true) = %s, want %s", k, got, want)
		}
	}
}

// TestAliases: every release from v0.23 to v0.27 behaves as v0.22, v0.29
// and v0.30 as v0.28, and "fixed" is the newest; Since orders releases
// and leaves V0 out.
func TestAliases(t *testing.T) {
	for _, n := range []string{"v0.23", "v0.24", "v0.25", "v0.26", "v0.27"} {
		if v, err := ParseVersion(n); err != nil || v != V022 {
			t.Errorf("%s parses as %v, %v; want v0.22", n, v, err)
		}
	}
	for _, n := range []string{"v0.28", "v0.29", "v0.30"} {
		if v, err := ParseVersion(n); err != nil || v != V028 {
			t.Errorf("%s parses as %v, %v; want v0.28", n, v, err)
		}
	}
	if v, _ := ParseVersion("fixed"); v != V031 || Fixed != V031 {
		t.Errorf("fixed is %v", v)
	}
	if !V031.Since(V022) || V019.Since(V022) || V0.Since(V013) || !V022.Since(V022) {
		t.Error("Since misorders releases")
	}
	if _, err := ParseVersion("v0.32"); err == nil {
		t.Error("an unmodelled release parsed")
	}
}
