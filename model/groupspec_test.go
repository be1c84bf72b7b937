package model

import "testing"

// cache_config.block_size after start-up is the smallest group block
// size, wherever that group stands; with no groups the platform's block
// stands.
func TestCacheBlockSize(t *testing.T) {
	g := func(bs ...int) []GroupSpec {
		var out []GroupSpec
		for _, b := range bs {
			out = append(out, GroupSpec{BlockSize: b})
		}
		return out
	}
	for _, tc := range []struct {
		groups []GroupSpec
		want   int
	}{
		{nil, 16},
		{g(176, 176), 176},
		{g(1024, 176), 176},
		{g(176, 64, 176), 64},
		{g(32768, 128), 128},
	} {
		if got := CacheBlockSize(tc.groups, 16); got != tc.want {
			t.Errorf("CacheBlockSize(%v) = %d, want %d", tc.groups, got, tc.want)
		}
	}
}
