package model

import (
	"strings"
	"testing"
)

// The config hooks and calculator rules per release, on the real configs.
// Expected block sizes are worked by hand in the comments.
func TestApplyRelease(t *testing.T) {
	cases := []struct {
		name      string
		file      string
		minor     int
		ssmFlag   string // engine.mamba_ssm_cache_dtype
		wantSSM   string // the temporal state's dtype
		wantBlock int
		wantLog   string // a line Rules.Log must hold ("" for none)
	}{
		// Qwen3.5-4B: conv 3·8192·2 = 49,152; recurrent 32·128·128 =
		// 524,288 elements; KV 2·4·256·2 = 4096 B/token.
		// fp32: 16·cdiv(49152 + 2097152, 65536) = 16·33 = 528 (#40696's log).
		{"qwen3.5 v0.19 takes the config's mamba_ssm_dtype", "qwen3.5-4b.json", 19, "auto", "float32", 528, ""},
		{"qwen3.5 fixed", "qwen3.5-4b.json", 31, "auto", "float32", 528, ""},
		// bf16: 16·cdiv(49152 + 1048576, 65536) = 16·17 = 272.
		{"qwen3.5, the flag wins with a warning", "qwen3.5-4b.json", 19, "bfloat16", "bfloat16", 272, "WARNING Qwen3.5 model specifies mamba_ssm_dtype='float32'"},
		{"qwen3.5, the flag equal to the config's: no warning", "qwen3.5-4b.json", 19, "float32", "float32", 528, ""},
		// Before #34489 the GDN temporal state took the conv dtype.
		{"qwen3.5 before #34489", "qwen3.5-4b.json", 14, "auto", "bfloat16", 272, ""},
		{"qwen3-next before #34489 ignores the flag", "qwen3-next-80b-a3b.json", 14, "float32", "bfloat16", 544, ""},
		// Qwen3-Next: recurrent fp32 32·128·128·4 = 2,097,152 + conv 49,152,
		// KV 2·2·256·2 = 2048: 16·cdiv(2146304, 32768) = 16·66 = 1056.
		{"qwen3-next since #34489 honours the flag", "qwen3-next-80b-a3b.json", 19, "float32", "float32", 1056, ""},
		// Nemotron-Nano-9B-v2: ssm 128·80·128 = 1,310,720 elements, conv
		// 73,728 B, KV 4096 B/token. 2-byte: 16·cdiv(2695168, 65536) = 672
		// (#24280's log); fp32: 16·cdiv(5316608, 65536) = 16·82 = 1312.
		{"nemotron v0.13: float16 (#29978)", "nemotron-nano-9b-v2.json", 13, "auto", "float16", 672, "Updating mamba_ssm_cache_dtype to 'float16' for NemotronH model"},
		{"nemotron v0.19: float16", "nemotron-nano-9b-v2.json", 19, "auto", "float16", 672, "Updating mamba_ssm_cache_dtype to 'float16'"},
		{"nemotron v0.22: float32 (#39032)", "nemotron-nano-9b-v2.json", 22, "auto", "float32", 1312, "Updating mamba_ssm_cache_dtype to 'float32'"},
		{"nemotron, an explicit flag is kept", "nemotron-nano-9b-v2.json", 31, "bfloat16", "bfloat16", 672, ""},
		{"no release: the flags as given", "nemotron-nano-9b-v2.json", 0, "auto", "bfloat16", 672, ""},
		// Jamba has no hook.
		{"jamba", "jamba-v0.1.json", 31, "auto", "bfloat16", 80, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := loadConfig(t, c.file)
			s.Cache = CacheConfig{TensorParallelSize: 1, MambaCacheDType: "auto", MambaSSMCacheDType: c.ssmFlag, KVCacheDType: "auto"}
			s.ApplyRelease(c.minor)
			ts := s.StateTensors()
			if got := ts[len(ts)-1].DType; got != c.wantSSM {
				t.Errorf("temporal state %s, want %s", got, c.wantSSM)
			}
			if got := s.Layout(16).BlockSize; got != c.wantBlock {
				t.Errorf("block size %d, want %d", got, c.wantBlock)
			}
			log := strings.Join(s.Cache.Rules.Log, "\n")
			if (c.wantLog == "") != (log == "") || !strings.Contains(log, c.wantLog) {
				t.Errorf("log %q, want %q", log, c.wantLog)
			}
		})
	}
}

// The Qwen3.5 hook reaches the text-only architectures from #50210.
func TestQwen35TextOnlyHook(t *testing.T) {
	for _, c := range []struct {
		minor int
		want  string
	}{{22, "bfloat16"}, {27, "float32"}} {
		s := loadConfig(t, "qwen3.5-4b.json")
		s.Architecture = "Qwen3_5ForCausalLM"
		s.Cache = CacheConfig{TensorParallelSize: 1, MambaSSMCacheDType: "auto"}
		s.ApplyRelease(c.minor)
		if ts := s.StateTensors(); ts[1].DType != c.want {
			t.Errorf("v0.%d: %s, want %s", c.minor, ts[1].DType, c.want)
		}
	}
}

// Under speculative decoding the conv state holds conv_kernel − 1 + K
// columns for the kinds whose model class passes num_spec, and the block
// grows with it.
func TestConvWidensUnderSpec(t *testing.T) {
	cases := []struct {
		file      string
		minor     int
		tp        int
		wantCols  int
		wantBlock int
	}{
		// Qwen3-Next TP 4, K = 3: conv (3+3)·(8192/4)·2 = 24,576; recurrent
		// 8·128·128·2 = 262,144; KV max(1, 2/4)·2·256·2 = 1024 B/token:
		// 16·cdiv(286720, 16384) = 16·18 = 288 (272 without drafts).
		{"qwen3-next-80b-a3b.json", 31, 4, 6, 288},
		// Nemotron-H since #33726: conv 6·12288·2 = 147,456 + fp32 ssm
		// 5,242,880: 16·cdiv(5390336, 65536) = 16·83 = 1328.
		{"nemotron-nano-9b-v2.json", 31, 1, 6, 1328},
		// ... and not before it: 672 (float16, conv 3 columns).
		{"nemotron-nano-9b-v2.json", 14, 1, 3, 672},
		// Bamba's model class passes no num_spec.
		{"bamba-9b.json", 31, 1, 3, 528},
		// KDA (Kimi Linear): conv 6·(3·32·128)·2 = 147,456 + fp32 recurrent
		// 2,097,152; MLA 1152 B/token aligned to 128 (#50000):
		// 128·cdiv(2244608, 147456) = 128·16 = 2048; to 64 before it,
		// 64·cdiv(2244608, 73728) = 64·31 = 1984.
		{"kimi-linear-48b-a3b.json", 31, 1, 6, 2048},
		{"kimi-linear-48b-a3b.json", 26, 1, 6, 1984},
		// ShortConv's calculator takes no num_spec.
		{"lfm2-1.2b.json", 31, 1, 2, 16},
	}
	for _, c := range cases {
		s := loadConfig(t, c.file)
		s.Cache = CacheConfig{TensorParallelSize: c.tp, MambaSSMCacheDType: "auto", NumSpeculativeTokens: 3}
		s.ApplyRelease(c.minor)
		ts := s.StateTensors()
		if ts[0].Dims[0] != c.wantCols {
			t.Errorf("%s v0.%d: conv %v, want %d columns", c.file, c.minor, ts[0].Dims, c.wantCols)
		}
		if got := s.Layout(16).BlockSize; got != c.wantBlock {
			t.Errorf("%s v0.%d: block size %d, want %d", c.file, c.minor, got, c.wantBlock)
		}
	}
}

// Every KV cache group carries its spec's block size: the attention block,
// and for Mamba groups the mamba_block_size given.
func TestGroupSpecs(t *testing.T) {
	s := loadConfig(t, "qwen3.5-4b.json")
	s.Cache = CacheConfig{TensorParallelSize: 1, MambaSSMCacheDType: "auto"}
	s.ApplyRelease(19)
	l := s.Layout(16)
	gs := s.GroupSpecs(&l, 4096)
	if len(gs) != 4 {
		t.Fatalf("%d groups, want 4", len(gs))
	}
	for _, g := range gs[:3] {
		if g.Kind != Mamba || g.BlockSize != 4096 || !strings.HasPrefix(g.Spec, "MambaSpec(block_size=4096, shapes=((3, 8192), (32, 128, 128)), dtypes=(bfloat16, float32), page_size_padded=2162688") {
			t.Errorf("mamba group %+v", g)
		}
	}
	if a := gs[3]; a.Kind != Attention || a.BlockSize != 528 || a.Spec != "FullAttentionSpec(block_size=528, num_kv_heads=4, head_size=256, dtype=bfloat16)" {
		t.Errorf("attention group %+v", a)
	}
}

// The unification rules per release: the MLA alignment of 128 tokens
// (#50000, v0.27) and the group-size slack (1.25 before #36684, 1.5 from
// v0.19).
func TestUnifyRulesPerRelease(t *testing.T) {
	// Kimi-K3 at TP 8 with an fp8 KV cache and FlashInfer MLA's 32-token
	// kernel blocks (vllm-project/vllm#50235's log: 1536 tokens): conv
	// 3·(3·96·128/8)·2 = 27,648; recurrent fp32 12·128·128·4 = 786,432;
	// MLA (512 + 64)·1 = 576 B/token. v0.27: 128·cdiv(814080, 73728) =
	// 128·12 = 1536; v0.26 (no such release serves it; the arithmetic
	// alone): 32·cdiv(814080, 18432) = 32·45 = 1440.
	for _, c := range []struct{ minor, want int }{{27, 1536}, {26, 1440}} {
		s := loadConfig(t, "kimi-k3.json")
		s.Cache = CacheConfig{TensorParallelSize: 8, KVCacheDType: "fp8", KernelBlockAlignment: 32}
		s.ApplyRelease(c.minor)
		if got := s.Layout(16).BlockSize; got != c.want {
			t.Errorf("kimi-k3 TP 8 fp8, v0.%d: block size %d, want %d", c.minor, got, c.want)
		}
	}
	// 9 Jamba layers, attention every other from layer 1: 4 attention, 5
	// Mamba, a ratio of exactly 1.25. Below 1.25× only: the group size is
	// the smallest bucket, 4, making 2 Mamba groups and 1 attention group;
	// below 1.5×: 5, one group of each kind.
	for _, c := range []struct{ minor, groups, size int }{{14, 3, 4}, {19, 2, 5}} {
		s := loadConfig(t, "jamba-v0.1.json")
		s.NumLayers, s.AttnLayerPeriod, s.AttnLayerOffset = 9, 2, 1
		s.ApplyRelease(c.minor)
		l := s.Layout(16)
		if len(l.Groups) != c.groups || l.GroupSize != c.size {
			t.Errorf("v0.%d: %d groups of %d, want %d of %d", c.minor, len(l.Groups), l.GroupSize, c.groups, c.size)
		}
	}
}
