package model

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Mode "all" rounds the block to a multiple of the Mamba kernel's chunk
// (HybridAttentionMambaModelConfig, config.py @ 1936cf38): Jamba-v0.1's
// state page is 311,296 B and a token's KV 4,096 B, so a state is
// cdiv(311296, 4096) = 76 tokens of attention page.
func TestUnifyAllMode(t *testing.T) {
	cases := []struct {
		name           string
		mambaBlockSize int // mamba_block_size given
		req            int // block_size asked for
		block, chunk   int
	}{
		// Mamba1 has no chunk: 2048 (#26377), so one block of 2048.
		{"Mamba1's 2048", 0, 16, 2048, 2048},
		// mamba_block_size is the chunk: 64·cdiv(76, 64) = 128.
		{"mamba_block_size 64", 64, 16, 128, 64},
		// lcm(100, 16) = 400 ≥ 76.
		{"mamba_block_size 100", 100, 16, 400, 400},
		// The alignment is the block size asked for: lcm(2048, 4096).
		{"block_size 4096", 0, 4096, 4096, 4096},
		{"block_size 48", 0, 48, 6144, 6144},
	}
	for _, c := range cases {
		s := loadConfig(t, "jamba-v0.1.json")
		s.Cache = CacheConfig{MambaChunkAligned: true, MambaBlockSize: c.mambaBlockSize}
		u := s.Unify(c.req)
		if u.BlockSize != c.block || u.Chunk != c.chunk {
			t.Errorf("%s: block %d, chunk %d; want %d, %d", c.name, u.BlockSize, u.Chunk, c.block, c.chunk)
		}
		if u.PageBytes != int64(u.BlockSize)*4096 {
			t.Errorf("%s: page %d B, want the block's KV, %d", c.name, u.PageBytes, u.BlockSize*4096)
		}
	}
	// Modes none and align keep the smallest aligned block: 80.
	s := loadConfig(t, "jamba-v0.1.json")
	if u := s.Unify(16); u.BlockSize != 80 || u.Chunk != 0 {
		t.Errorf("modes none and align: %+v, want block 80", u)
	}
}

// The chunk comes from mamba_chunk_size, else chunk_size, else the
// config class's default: 256 for Mamba2 (Bamba), 2048 for Mamba1.
func TestChunkSize(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "scenarios", "models", "bamba-9b.json"))
	if err != nil {
		t.Fatal(err)
	}
	with := func(field string) Shape {
		t.Helper()
		b := raw
		if field != "" {
			b = []byte(strings.Replace(string(raw), "{", "{"+field+",", 1))
		}
		s, err := FromHFConfig(b, "bamba.json")
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, c := range []struct {
		field string
		want  int
	}{{"", 256}, {`"mamba_chunk_size": 128`, 128}, {`"chunk_size": 64`, 64}, {`"mamba_chunk_size": 32, "chunk_size": 64`, 32}} {
		if s := with(c.field); s.ChunkSize() != c.want {
			t.Errorf("bamba with %s: chunk %d, want %d", c.field, s.ChunkSize(), c.want)
		}
	}
	if j := loadConfig(t, "jamba-v0.1.json"); j.ChunkSize() != 2048 {
		t.Errorf("Jamba (Mamba1): chunk %d, want 2048", j.ChunkSize())
	}
	// In mode all, Bamba's block is a multiple of 256 that holds a state.
	s := with("")
	s.Cache.MambaChunkAligned = true
	u := s.Unify(16)
	perState := int((u.MambaPage + u.AttnPage1 - 1) / u.AttnPage1)
	if u.BlockSize%256 != 0 || u.BlockSize < perState || u.BlockSize-256 >= perState {
		t.Errorf("bamba, all: block %d for a state of %d tokens, want the least multiple of 256", u.BlockSize, perState)
	}
	if _, err := FromHFConfig([]byte(strings.Replace(string(raw), "{", `{"mamba_chunk_size": 0,`, 1)), "x.json"); err == nil || !strings.Contains(err.Error(), "mamba_chunk_size: must be > 0") {
		t.Errorf("mamba_chunk_size 0: error %v", err)
	}
}
