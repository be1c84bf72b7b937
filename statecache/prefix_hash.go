package statecache

// BlockHash names a full block's token prefix: a chain over the block's
// tokens (or a caller's content id) and its parent's hash, so two blocks
// share a hash only when every token before and in them agrees (vLLM's
// hash_block_tokens, vllm/v1/core/kv_cache_utils.py). It is 64 bits, fixed
// and seedless, so runs repeat exactly; vLLM seeds NONE_HASH randomly
// unless PYTHONHASHSEED is set.
type BlockHash uint64

// NoneHash is the parent of a request's first block.
const NoneHash BlockHash = 0x9e3779b97f4a7c15

// BlockKey is a hash in one KV cache group: the key of the cached-block
// table (vLLM's BlockHashWithGroupId). The chain itself does not depend on
// the group, so one request's hashes serve every group.
type BlockKey struct {
	Hash  BlockHash
	Group int32
	// run places the key in the table beside its chain's neighbours
	// (keyAt): the table's business, not part of the key's identity.
	run uint32
}

// runLen is how many consecutive positions of a chain share a run: the
// slots of a table's cache line.
const runLen = 8

// keyAt is the key of hashes[i] in group g, with its run: the mixed top
// bits of the hash at the run's first position, i rounded down to a
// multiple of runLen, and i's offset in the run in the low bits. Equal
// keys have equal runs, since a hash names its whole prefix.
func keyAt(hashes []BlockHash, i int, g int32) BlockKey {
	a := uint32((uint64(hashes[i&^(runLen-1)]) * 0x9e3779b97f4a7c15) >> 32)
	return BlockKey{Hash: hashes[i], Group: g, run: a&^(runLen-1) | uint32(i&(runLen-1))}
}

// mix is splitmix64's finalizer: every input bit reaches every output bit.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// hashWord folds one word into a running hash, order-sensitively.
func hashWord(h, w uint64) uint64 { return foldMixed(h, wordMix(w)) }

// wordMix and foldMixed split hashWord, so that a word folded into many
// hashes (a segment's id, a block's length, a constant mark) is mixed
// once: hashWord(h, w) == foldMixed(h, wordMix(w)).
func wordMix(w uint64) uint64       { return mix(w + 0x9e3779b97f4a7c15) }
func foldMixed(h, wm uint64) uint64 { return mix(h ^ wm) }

// contentMark is wordMix(^0), HashBlockContent's first word.
var contentMark = wordMix(^uint64(0))

// HashBlockTokens is the hash of a block holding tokens after parent.
func HashBlockTokens(parent BlockHash, tokens []int32) BlockHash {
	h := hashWord(uint64(parent), uint64(len(tokens)))
	for _, t := range tokens {
		h = hashWord(h, uint64(uint32(t)))
	}
	return BlockHash(h)
}

// HashBlockContent is the hash of a block whose contents a caller names by
// one id (a trace's hash_ids), after parent. It never equals a token
// block's hash except by a 64-bit collision.
func HashBlockContent(parent BlockHash, id uint64) BlockHash {
	// One mix on the chain: id's own is independent of it.
	return BlockHash(mix(uint64(parent) ^ contentMark ^ wordMix(id)))
}

// AppendBlockHashes extends hashes, the chain of tokens' first len(hashes)
// full blocks, with the hashes of the full blocks after them (vLLM's
// request.block_hashes, grown as tokens are appended). A partial last
// block has no hash.
func AppendBlockHashes(hashes []BlockHash, tokens []int32, blockSize int) []BlockHash {
	parent := NoneHash
	if n := len(hashes); n > 0 {
		parent = hashes[n-1]
	}
	for i := len(hashes); (i+1)*blockSize <= len(tokens); i++ {
		parent = HashBlockTokens(parent, tokens[i*blockSize:(i+1)*blockSize])
		hashes = append(hashes, parent)
	}
	return hashes
}
