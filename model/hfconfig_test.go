package model

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func loadConfig(t testing.TB, name string) Shape {
	t.Helper()
	p := filepath.Join("..", "scenarios", "models", name)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s, err := FromHFConfig(b, p)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The expected values below are worked by hand from each config's fields
// (the comments show the arithmetic), not read back from the code.
func TestConfigsDeriveVLLMsLayout(t *testing.T) {
	cases := []struct {
		file            string
		kind            StateKind
		attn, state     int
		mambaPage       int64 // Σ state tensor bytes, one layer, TP 1
		attnPage1       int64 // K+V (or MLA latent) bytes per token
		blockSize       int
		raised          bool
		paddingPct      float64 // to 2 decimals, as vLLM logs it
		groups, gsize   int
		firstGroup      LayerKind
		params          float64 // published total, in billions
		paramsTolerance float64 // relative
	}{
		// conv 3·8192·2 + ssm 8192·16·2 = 311,296; KV 2·8·128·2 = 4096;
		// 16·cdiv(311296, 16·4096) = 80; (80·4096 − 311296)/311296 = 5.26%.
		{"jamba-v0.1.json", Mamba1, 4, 28, 311296, 4096, 80, true, 5.26, 8, 4, Mamba, 51.6, 0.01},
		// d_inner 128·80 = 10240; conv 3·(10240 + 2·8·128)·2 = 73,728;
		// ssm 128·80·128·2 = 2,621,440; 16·cdiv(2695168, 65536) = 672.
		{"nemotron-nano-9b-v2.json", Mamba2, 4, 27, 2695168, 4096, 672, true, 2.13, 8, 4, Mamba, 8.89, 0.01},
		// conv 3·(8192 + 2·128)·2 = 50,688; ssm 128·64·128·2 = 2,097,152;
		// 16·cdiv(2147840, 65536) = 528; 14,848 B of padding = 0.69%.
		{"bamba-9b.json", Mamba2, 3, 29, 2147840, 4096, 528, true, 0.69, 11, 3, Mamba, 9.78, 0.01},
		{"granite-4.0-h-small.json", Mamba2, 4, 36, 2147840, 4096, 528, true, 0.69, 10, 4, Mamba, 32.2, 0.01},
		// conv 3·(3072 + 2·256)·2 = 21,504; ssm 48·64·256·2 = 1,572,864;
		// KV 2·2·128·2 = 1024; 16·cdiv(1594368, 16384) = 1568; every
		// layer is both, so 24 + 24 layers make two groups of 24, the
		// attention first (FalconH1ParallelHybrid builds it first).
		{"falcon-h1-1.5b.json", Mamba2, 24, 24, 1594368, 1024, 1568, true, 0.71, 2, 24, Attention, 1.5, 0.1},
		// conv 3·(2·16·128 + 32·128)·2 = 49,152; recurrent 32·128·128·2 =
		// 1,048,576; KV 2·2·256·2 = 2048; 16·cdiv(1097728, 32768) = 544.
		{"qwen3-next-80b-a3b.json", GatedDeltaNet, 12, 36, 1097728, 2048, 544, true, 1.49, 4, 12, Mamba, 79.674391296, 0.001},
		// conv 2·2048·2 = 8192 fits the 16-token page of 16·2048 B: no
		// raise, padded to 32,768 B (300%).
		{"lfm2-1.2b.json", ShortConv, 6, 10, 8192, 2048, 16, false, 300, 3, 6, Mamba, 1.17, 0.01},
		// 64·128·128·2 = 2,097,152 = 512 tokens of 4096 B exactly.
		{"minimax-text-01.json", LinearAttention, 10, 70, 2097152, 4096, 512, true, 0, 8, 10, Mamba, 456, 0.01},
		// conv 3·(32·128 + 2·32·128)·2 = 73,728; recurrent fp32
		// 32·128·128·4 = 2,097,152; MLA (512 + 64)·2 = 1152 per token,
		// aligned to 128: 128·cdiv(2170880, 147456) = 1920 (64·30 before #50000).
		{"kimi-linear-48b-a3b.json", KDA, 7, 20, 2170880, 1152, 1920, true, 1.89, 4, 7, Mamba, 48, 0.05},
		// Kimi-K3: conv 3·(3·96·128)·2 = 221,184; recurrent fp32
		// 96·128·128·4 = 6,291,456; MLA 1152 per token, aligned to 128
		// (#50000; 64 before it, 5696 tokens):
		// 128·cdiv(6512640, 147456) = 5760, 122,880 B of padding = 1.89%;
		// 69 KDA layers in groups of 24 make 3 groups, then the attention's.
		// 2779.93 B is the count xinference lists for moonshotai/Kimi-K3.
		{"kimi-k3.json", KDA, 24, 69, 6512640, 1152, 5760, true, 1.89, 4, 24, Mamba, 2779.93, 0.001},
	}
	kinds := map[StateKind]bool{}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			s := loadConfig(t, c.file)
			kinds[s.StateKind()] = true
			if s.StateKind() != c.kind || s.NumAttentionLayers() != c.attn || s.NumMambaLayers() != c.state {
				t.Errorf("kind %s, %d attention, %d state layers; want %s, %d, %d", s.StateKind(), s.NumAttentionLayers(), s.NumMambaLayers(), c.kind, c.attn, c.state)
			}
			l := s.Layout(16)
			u := l.Unify
			if u.MambaPage != c.mambaPage || u.AttnPage1 != c.attnPage1 {
				t.Errorf("mamba page %d, attention page/token %d; want %d, %d (%v)", u.MambaPage, u.AttnPage1, c.mambaPage, c.attnPage1, s.StateTensors())
			}
			if l.BlockSize != c.blockSize || u.Raised != c.raised || math.Round(u.PaddingPct*100)/100 != c.paddingPct {
				t.Errorf("block size %d raised %v padding %.2f%%; want %d %v %.2f%%", l.BlockSize, u.Raised, u.PaddingPct, c.blockSize, c.raised, c.paddingPct)
			}
			if l.PageBytes != int64(l.BlockSize)*u.AttnPage1 || l.PageBytes < u.MambaPage {
				t.Errorf("page %d is not block size × attention page, or smaller than the state page", l.PageBytes)
			}
			if len(l.Groups) != c.groups || l.GroupSize != c.gsize || l.Groups[0].Kind != c.firstGroup {
				t.Errorf("%d groups of %d, first %s; want %d of %d, first %s", len(l.Groups), l.GroupSize, l.Groups[0].Kind, c.groups, c.gsize, c.firstGroup)
			}
			got := float64(s.NumParameters) / 1e9
			if math.Abs(got-c.params)/c.params > c.paramsTolerance {
				t.Errorf("%.3f B parameters, published %.3f B (tolerance %.1f%%)", got, c.params, 100*c.paramsTolerance)
			}
		})
	}
	if len(kinds) != 6 {
		t.Errorf("the configs cover %d state kinds, want all six", len(kinds))
	}
}

// Groups are bucketed by kind in layer order and filled with a stride:
// Jamba's 28 Mamba layers make 7 groups, group i holding mamba[i::7].
func TestGroupOrderAndStride(t *testing.T) {
	s := loadConfig(t, "jamba-v0.1.json")
	l := s.Layout(16)
	want := []string{
		"mamba [0 8 16 24]", "mamba [1 9 17 25]", "mamba [2 10 18 26]", "mamba [3 11 19 27]",
		"mamba [5 13 21 29]", "mamba [6 14 22 30]", "mamba [7 15 23 31]", "attention [4 12 20 28]",
	}
	for i, g := range l.Groups {
		if got := fmt.Sprintf("%s %v", g.Kind, g.Layers); i >= len(want) || got != want[i] {
			t.Errorf("group %d: %s", i, got)
		}
	}
	// LFM2: layer 0 is a convolution, so the conv groups come first; 10
	// conv layers in groups of 6 are 2 groups, conv[0::2] and conv[1::2].
	// Conv layers are 0 1 3 4 6 7 9 11 13 15.
	ls := loadConfig(t, "lfm2-1.2b.json")
	lf := ls.Layout(16)
	if got := fmt.Sprint(lf.Groups[0].Layers, lf.Groups[1].Layers, lf.Groups[2].Kind, lf.Groups[2].Layers); got != "[0 3 6 9 13] [1 4 7 11 15] attention [2 5 8 10 12 14]" {
		t.Errorf("LFM2 groups %s", got)
	}
}

// Tensor parallelism divides the state widths, pads Mamba2's groups and
// shares KV heads, as MambaStateShapeCalculator and get_num_kv_heads do.
func TestTensorParallel(t *testing.T) {
	shape := func(s Shape, tp int) string {
		s.Cache.TensorParallelSize = tp
		var out []string
		for _, x := range s.StateTensors() {
			out = append(out, fmt.Sprint(x.Dims))
		}
		return strings.Join(out, " ")
	}
	nem := loadConfig(t, "nemotron-nano-9b-v2.json")
	// TP 2: 8 groups divide; conv (10240 + 2·8·128)/2 = 6144.
	if got := shape(nem, 2); got != "[3 6144] [64 80 128]" {
		t.Errorf("nemotron TP 2: %s", got)
	}
	// TP 16: 8 groups are padded to 16; conv (10240 + 2·16·128)/16 = 896.
	if got := shape(nem, 16); got != "[3 896] [8 80 128]" {
		t.Errorf("nemotron TP 16: %s", got)
	}
	// Bamba's single group is padded to 2 at TP 2: (8192 + 2·2·128)/2.
	if got := shape(loadConfig(t, "bamba-9b.json"), 2); got != "[3 4352] [64 64 128]" {
		t.Errorf("bamba TP 2: %s", got)
	}
	// Qwen3-Next at TP 4: 2 KV heads, one per rank at least.
	q := loadConfig(t, "qwen3-next-80b-a3b.json")
	q.Cache.TensorParallelSize = 4
	if q.KVBytesPerToken() != 2*1*256*2 {
		t.Errorf("qwen3-next TP 4: %d B per token", q.KVBytesPerToken())
	}
	// Issue 11: the Jamba-3B-like preset's first wrapping slot doubles at
	// TP 2 (d_inner 5120 → 2560, KV heads 4 → 2: the page halves).
	j, _ := Preset("jamba-reasoning-3b")
	for _, c := range []struct {
		tp    int
		first int64
	}{{1, 47663}, {2, 95326}} {
		j.Cache.TensorParallelSize = c.tp
		l := j.Layout(16)
		if got := ((int64(1) << 32) + l.StateStrideElems - 1) / l.StateStrideElems; got != c.first {
			t.Errorf("jamba-reasoning-3b TP %d: stride %d, first wrapping slot %d, want %d", c.tp, l.StateStrideElems, got, c.first)
		}
	}
	j.Cache.TensorParallelSize = 1
	if err := j.CheckTP(3); err == nil || !strings.Contains(err.Error(), "num_attention_heads") {
		t.Errorf("TP 3 on 20 heads: %v", err)
	}
	j.Cache.TensorParallelSize = 2
	if j.WeightsPerRankGiB() != j.WeightsGiB/2 {
		t.Errorf("weights per rank %g of %g", j.WeightsPerRankGiB(), j.WeightsGiB)
	}
}

// The dtype knobs and the kernel block alignment move the block size.
func TestCacheArguments(t *testing.T) {
	cases := []struct {
		name  string
		cache CacheConfig
		req   int
		want  int
	}{
		{"bf16 SSM (auto)", CacheConfig{}, 16, 80},
		// ssm 8192·16·4 = 524,288 + conv 49,152: 16·cdiv(573440, 65536) = 144.
		{"fp32 SSM", CacheConfig{MambaSSMCacheDType: "float32"}, 16, 144},
		// KV 2·8·128·1 = 2048 B/token: 16·cdiv(311296, 32768) = 160.
		{"fp8 KV", CacheConfig{KVCacheDType: "fp8"}, 16, 160},
		// 32·cdiv(311296, 131072) = 96.
		{"alignment 32", CacheConfig{KernelBlockAlignment: 32}, 16, 96},
		// The requested size is the alignment when larger: 64·cdiv(311296, 262144) = 128.
		{"block_size 64", CacheConfig{}, 64, 128},
		{"block_size 256 already holds a state", CacheConfig{}, 256, 256},
	}
	for _, c := range cases {
		s := loadConfig(t, "jamba-v0.1.json")
		s.Cache = c.cache
		if got := s.Layout(c.req).BlockSize; got != c.want {
			t.Errorf("%s: block size %d, want %d", c.name, got, c.want)
		}
	}
	// KDA's recurrent state stays float32 whatever mamba_ssm_cache_dtype says.
	k := loadConfig(t, "kimi-linear-48b-a3b.json")
	k.Cache.MambaSSMCacheDType = "float16"
	if ts := k.StateTensors(); ts[1].DType != "float32" || ts[0].DType != "bfloat16" {
		t.Errorf("KDA dtypes %v", ts)
	}
}

// Only Mamba1's prefill kernel formed slot × stride in 32 bits.
func TestIndexBitsPerKind(t *testing.T) {
	for _, f := range []string{"jamba-v0.1.json", "nemotron-nano-9b-v2.json", "qwen3-next-80b-a3b.json", "lfm2-1.2b.json", "minimax-text-01.json", "kimi-linear-48b-a3b.json"} {
		s := loadConfig(t, f)
		want := uint(64)
		if s.StateKind() == Mamba1 {
			want = 32
		}
		if got := s.IndexBits(32); got != want {
			t.Errorf("%s (%s): index bits %d, want %d", f, s.StateKind(), got, want)
		}
	}
}

// The presets that have a public config are names for it: jamba-mini is
// Jamba-v0.1's shape, served with a float32 SSM state as in the incident.
func TestPresetMatchesConfig(t *testing.T) {
	p, _ := Preset("jamba-mini")
	c := loadConfig(t, "jamba-v0.1.json")
	c.Cache.MambaSSMCacheDType = p.SSMStateDType
	pl, cl := p.Layout(16), c.Layout(16)
	if fmt.Sprint(pl) != fmt.Sprint(cl) {
		t.Errorf("jamba-mini layout %+v\nconfig layout %+v", pl, cl)
	}
	if math.Abs(p.WeightsGiB-c.WeightsGiB) > 0.01 {
		t.Errorf("jamba-mini weights %.2f GiB, config %.2f GiB", p.WeightsGiB, c.WeightsGiB)
	}
}

func TestConfigErrors(t *testing.T) {
	cases := []struct{ json, want string }{
		{`{"model_type": "llama4"}`, `x.json:1: field model_type: unsupported "llama4"`},
		{"{\n  \"model_type\": \"zamba\"\n}", `x.json:2: field model_type: "zamba" is not supported`},
		{`{"hidden_size": 8}`, "field model_type: missing"},
		{"{\n\"model_type\": \"nemotron_h\", \"hidden_size\": 8, \"vocab_size\": 8,\n\"num_hidden_layers\": 3,\n\"hybrid_override_pattern\": \"M*\"}", "x.json:4: field hybrid_override_pattern: lists 2 layers, num_hidden_layers is 3"},
		{`{"model_type": "jamba", "num_hidden_layers": 2.5}`, "field num_hidden_layers: want a non-negative integer"},
		{"{\n\"model_type\": \"jamba\",,}", "x.json:2: not a JSON object"},
		{`[1, 2]`, "not a JSON object"},
		{`{"model_type": "jamba", "num_hidden_layers": 2, "hidden_size": 8, "vocab_size": 8, "attn_layer_period": 2, "attn_layer_offset": 1, "mamba_expand": 2, "mamba_d_state": 4, "mamba_d_conv": 4, "mamba_dt_rank": "wide"}`, `field mamba_dt_rank: want a non-negative integer below 2^24, got "wide"`},
		{`{"model_type": "qwen3_next", "num_hidden_layers": 4, "hidden_size": 8, "vocab_size": 8, "num_attention_heads": 2, "linear_num_key_heads": 1, "linear_key_head_dim": 1, "linear_num_value_heads": 1, "linear_value_head_dim": 1, "linear_conv_kernel_dim": 4, "layer_types": ["linear_attention", "mlp", "linear_attention", "full_attention"]}`,
			`field layer_types: layer 1 is "mlp"`},
		// Qwen3.5's own SSM dtype must be one of vLLM's MambaDType values.
		{"{\"model_type\": \"qwen3_5\", \"text_config\": {\"model_type\": \"qwen3_5_text\", \"num_hidden_layers\": 4, \"hidden_size\": 8, \"vocab_size\": 8,\n\"mamba_ssm_dtype\": \"int8\", \"num_attention_heads\": 2, \"linear_num_key_heads\": 1, \"linear_key_head_dim\": 1, \"linear_num_value_heads\": 1, \"linear_value_head_dim\": 1, \"linear_conv_kernel_dim\": 4, \"full_attention_interval\": 4}}",
			`x.json:2: field mamba_ssm_dtype: unknown dtype "int8" (want float32, float16 or bfloat16)`},
	}
	for _, c := range cases {
		_, err := FromHFConfig([]byte(c.json), "x.json")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.json, err, c.want)
		}
	}
}

func FuzzFromHFConfig(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "scenarios", "models", "*.json"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"model_type": "lfm2", "num_hidden_layers": 1, "hidden_size": 1, "vocab_size": 1, "full_attn_idxs": [0]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := FromHFConfig(data, "fuzz.json")
		if err != nil {
			if _, ok := err.(*ConfigError); !ok {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("derived shape does not validate: %v", err)
		}
		for _, tp := range []int{1, 2, 8} {
			s.Cache.TensorParallelSize = tp
			l := s.Layout(16)
			if s.NumAttentionLayers() > 0 && s.NumMambaLayers() > 0 && l.PageBytes < l.Unify.MambaPage {
				t.Fatalf("TP %d: page %d smaller than the state page %d", tp, l.PageBytes, l.Unify.MambaPage)
			}
			n := 0
			for _, g := range l.Groups {
				n += len(g.Layers)
			}
			if n != s.NumAttentionLayers()+s.NumMambaLayers() {
				t.Fatalf("groups hold %d layers of %d", n, s.NumAttentionLayers()+s.NumMambaLayers())
			}
		}
	})
}

// A small Zamba2-shaped config (synthetic, not a published model): the
// shared blocks' attentions register before the layers' mixers, so the
// attention group comes first, block by block.
func TestZamba2AttentionFirst(t *testing.T) {
	cfg := `{"model_type": "zamba2", "num_hidden_layers": 8, "hidden_size": 64, "vocab_size": 100,
	  "num_attention_heads": 4, "attention_head_dim": 32, "num_mem_blocks": 2,
	  "layers_block_type": ["mamba", "hybrid", "mamba", "hybrid", "mamba", "hybrid", "mamba", "hybrid"],
	  "mamba_expand": 2, "n_mamba_heads": 4, "mamba_headdim": 32, "mamba_ngroups": 1, "mamba_d_state": 16, "mamba_d_conv": 4,
	  "torch_dtype": "bfloat16"}`
	s, err := FromHFConfig([]byte(cfg), "z.json")
	if err != nil {
		t.Fatal(err)
	}
	l := s.Layout(16)
	// 4 attention (hybrid layers 1, 3, 5, 7: block 0 holds 1 and 5, block
	// 1 holds 3 and 7) and 8 Mamba2: groups of 4, attention first.
	got := fmt.Sprint(l.Groups)
	if got != "[{attention [1 5 3 7]} {mamba [0 2 4 6]} {mamba [1 3 5 7]}]" {
		t.Errorf("groups %s", got)
	}
	// KV: 2·4·32·2 = 512 B/token; state: conv 3·(128 + 2·16)·2 = 960 +
	// ssm 4·32·16·2 = 4096 = 5056 B: 16·cdiv(5056, 8192) = 16, no raise.
	if u := l.Unify; u.AttnPage1 != 512 || u.MambaPage != 5056 || l.BlockSize != 16 || u.Raised {
		t.Errorf("unify %+v", u)
	}
}

// Jamba's mamba_dt_rank may be "auto": ceil(hidden / 16).
func TestJambaDtRankAuto(t *testing.T) {
	base := loadConfig(t, "jamba-v0.1.json")
	b, _ := os.ReadFile(filepath.Join("..", "scenarios", "models", "jamba-v0.1.json"))
	auto := strings.Replace(string(b), `"mamba_dt_rank": 256`, `"mamba_dt_rank": "auto"`, 1)
	s, err := FromHFConfig([]byte(auto), "auto.json")
	if err != nil || s.NumParameters != base.NumParameters {
		t.Errorf("auto dt rank: %v, %d parameters, want %d (4096/16 = 256)", err, s.NumParameters, base.NumParameters)
	}
}
