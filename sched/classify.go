package sched

import (
	"fmt"
	"strings"
)

// Version selects the batch reorder and Mamba split of a vLLM release.
type Version uint8

const (
	// V013: vLLM ≤ 0.13. is_decode = num_scheduled ≤ 1: a new request given
	// one token is a decode (bug A).
	V013 Version = iota
	// V014: PR #32118. The reorder marks num_computed == 0 as prefill, but
	// the Mamba split still goes by query length, so a new 1-token row
	// can still reach the decode kernel.
	V014
	// Fixed: the split also asks whether the request is still prefilling;
	// a request with no state never takes the decode path.
	Fixed
	// V0: the old engine's control: separate prefill and decode steps, and
	// Mamba1 always on the prefill path.
	V0
)

var versionNames = [...]string{"v0.13", "v0.14", "fixed", "v0"}

func (v Version) String() string { return versionNames[v] }

// ParseVersion reads a vllm_version value.
func ParseVersion(s string) (Version, error) {
	for i, n := range versionNames {
		if n == s {
			return Version(i), nil
		}
	}
	return 0, fmt.Errorf("unknown vllm_version %q (known: %s)", s, strings.Join(versionNames[:], ", "))
}

// VersionNames lists the known versions.
func VersionNames() []string { return append([]string(nil), versionNames[:]...) }

// Region is where the batch reorder puts a row.
type Region uint8

const (
	RegionDecode Region = iota
	RegionExtend
	RegionPrefill
)

func (r Region) String() string { return [...]string{"decode", "extend", "prefill"}[r] }

// Path is the kernel path a row takes in every Mamba layer.
type Path uint8

const (
	PathPrefill Path = iota // selective_scan_fwd / causal_conv1d_fn
	PathDecode              // selective_state_update / causal_conv1d_update
)

func (p Path) String() string { return [...]string{"prefill", "decode"}[p] }

// decodeThreshold is the Mamba backend's reorder_batch_threshold.
const decodeThreshold = 1

func (v Version) region(r *Row) Region {
	q, c := r.NumScheduled, r.NumComputed
	if v == V013 {
		switch {
		case q <= decodeThreshold:
			return RegionDecode
		case c > 0:
			return RegionExtend
		}
		return RegionPrefill
	}
	switch {
	case c == 0:
		return RegionPrefill
	case q <= decodeThreshold:
		return RegionDecode
	}
	return RegionExtend
}

// Classify reorders rows into decode, extend and prefill regions (stable
// within each region) and assigns each row its Mamba kernel path and
// has_initial_state flag, as the given version does. forcePrefill is the
// seeds' diagnostic: every row through the prefill path. It returns the
// number of rows on the decode path (a prefix of rows). tmp is scratch of
// at least len(rows).
func Classify(v Version, rows, tmp []Row, forcePrefill bool) int {
	if v != V0 {
		for i := range rows {
			rows[i].Region = v.region(&rows[i])
		}
		stablePartition(rows, tmp)
	} else {
		for i := range rows {
			rows[i].Region = V014.region(&rows[i])
		}
	}
	nd := 0
	switch {
	case forcePrefill || v == V0:
		nd = 0
	case v == Fixed:
		for nd < len(rows) && rows[nd].NumScheduled <= decodeThreshold &&
			rows[nd].NumComputed > 0 && rows[nd].NumComputed >= rows[nd].Req.NumPromptTokens {
			nd++
		}
	default:
		// split_decodes_and_prefills: by query length only.
		for nd < len(rows) && rows[nd].NumScheduled <= decodeThreshold {
			nd++
		}
	}
	for i := range rows {
		if i < nd {
			rows[i].Path = PathDecode
			rows[i].HasInitialState = true
		} else {
			rows[i].Path = PathPrefill
			rows[i].HasInitialState = rows[i].NumComputed > 0
		}
	}
	return nd
}

func stablePartition(rows, tmp []Row) {
	sorted := true
	for i := 1; i < len(rows) && sorted; i++ {
		sorted = rows[i-1].Region <= rows[i].Region
	}
	if sorted {
		return // the common batch: running decodes, then new prefills
	}
	tmp = tmp[:0]
	for reg := RegionDecode; reg <= RegionPrefill; reg++ {
		for i := range rows {
			if rows[i].Region == reg {
				tmp = append(tmp, rows[i])
			}
		}
	}
	copy(rows, tmp)
}
