package statecache

import (
	"fmt"
	"slices"
)

// HitRule is one kind of KV cache group's prefix-hit lookup (vLLM's
// SingleTypeKVCacheManager.find_longest_cache_hit, a class method there
// too): full attention, a sliding window, and later the Mamba group's
// modes. Rules keep no per-request state.
type HitRule interface {
	// FindLongestCacheHit sets dst[i] to the blocks of groups[i] that
	// serve the longest prefix of at most maxLength tokens whose length
	// is a multiple of alignment, and returns that length in blocks.
	// Positions the group does not need hold NullBlock. dst's slices are
	// reused (truncated, then appended to).
	FindLongestCacheHit(p *BlockPool, hashes []BlockHash, maxLength, alignment int, groups []int32, dst [][]int32) int
	BlockSize() int
	// DownwardClosed: a hit of n blocks implies hits of every shorter
	// length, so one lookup serves every smaller candidate.
	DownwardClosed() bool
}

// FullAttention is the full-attention rule: every block of the prefix,
// left to right, until the first miss in any group.
type FullAttention struct{ Block int }

func (f FullAttention) BlockSize() int       { return f.Block }
func (f FullAttention) DownwardClosed() bool { return true }

func (f FullAttention) FindLongestCacheHit(p *BlockPool, hashes []BlockHash, maxLength, alignment int, groups []int32, dst [][]int32) int {
	for i := range groups {
		dst[i] = dst[i][:0]
	}
	n := min(maxLength/f.Block, len(hashes))
	hit, window := 0, hitWindow
	for hit < n {
		// Probe a window's slots together (their cache misses overlap),
		// then look its blocks up in order.
		end := min(hit+window, n)
		window = hitWindowOn
		if p.pc != nil {
			p.prefetchHashes(hashes, hit, end, groups)
		}
		for ; hit < end; hit++ {
			// The hashes chain: past the first miss nothing can hit.
			if !p.getCachedInto(hashes, hit, groups, dst) {
				n = hit
				break
			}
		}
	}
	for hit > 0 && hit*f.Block%alignment != 0 {
		hit--
	}
	for i := range groups {
		dst[i] = dst[i][:hit]
	}
	return hit
}

// hitWindow is how many blocks ahead a full-attention lookup prefetches
// first: enough misses to overlap, few wasted past the hit's end (most
// lookups on a trace that shares little miss at once). hitWindowOn is the
// windows after a whole window hit: a runs table (runTag) has a window of
// hitWindow on one line, so a long hit's lines are touched four at a time
// (docs/performance.md, "Design choices measured").
const (
	hitWindow   = 8
	hitWindowOn = 32
)

// prefetchHashes touches the table slots of hashes[lo:hi] in every group.
func (p *BlockPool) prefetchHashes(hashes []BlockHash, lo, hi int, groups []int32) {
	var s int32
	for i := lo; i < hi; i += p.pc.table.stride(i) {
		for _, g := range groups {
			s ^= p.pc.table.prefetch(keyAt(hashes, i, g))
		}
	}
	p.pc.sink ^= s
}

// cachedAll: hashes[i] is cached in every group of groups.
func (p *BlockPool) cachedAll(hashes []BlockHash, i int, groups []int32) bool {
	if p.pc == nil {
		return false
	}
	for _, g := range groups {
		if _, ok := p.pc.table.probe(keyAt(hashes, i, g)); !ok {
			return false
		}
	}
	return true
}

// cachedBlock is the block cached under hashes[i] in group g (the first
// cached, of equal ones), or NullBlock.
func (p *BlockPool) cachedBlock(hashes []BlockHash, i int, g int32) int32 {
	return p.pc.table.lookup(keyAt(hashes, i, g))
}

// getCachedInto appends hashes[pos]'s block in each group to dst[i], all
// or nothing.
func (p *BlockPool) getCachedInto(hashes []BlockHash, pos int, groups []int32, dst [][]int32) bool {
	if p.pc == nil {
		return false
	}
	for i, g := range groups {
		b := p.pc.table.lookup(keyAt(hashes, pos, g))
		if b == NullBlock {
			for j := range i {
				dst[j] = dst[j][:len(dst[j])-1]
			}
			return false
		}
		dst[i] = append(dst[i], b)
	}
	return true
}

// HitGroup is one rule over the KV cache groups that share its spec.
type HitGroup struct {
	Rule   HitRule
	Groups []int32
}

// HybridCoordinator finds the longest prefix every KV cache group can
// serve (vLLM's HybridKVCacheCoordinator.find_longest_cache_hit): each
// rule in turn accepts the candidate length or shortens it, and any
// shortening restarts the round, until a round changes nothing. Full
// attention goes first: its hit bounds the rest, and later rounds only
// trim it. The candidate is in tokens; each rule reads it at its own
// block size, over the request's hashes viewed at that size.
type HybridCoordinator struct {
	rules     []HitGroup
	alignment int         // alignment_tokens: the lcm of the rules' block sizes, or the hash block with fine-grained hits
	hit       [][]int32   // per group id: the last hit's blocks
	dst       [][][]int32 // per rule: its groups' slices, lent to the rule
	looked    []bool
	rounds    int // of the last lookup (tests check the restarts happen)
	// first: the first rule's hit in the last lookup's first round, in
	// tokens (full attention's own, before the other rules trim it).
	first int
	// hashBlock is block_pool.hash_block_size: the lookup's hashes are
	// of blocks this long. views[i] is rule i's view of them at its
	// block size (BlockHashesAt), made once per lookup (viewed[i]) in
	// scratch kept across lookups; nil for a rule at the hash block.
	hashBlock int
	views     [][]BlockHash
	viewed    []bool
	// sized: built by NewHybridCoordinatorAt, vLLM's loop @ 6adad0876:
	// the EAGLE drop once per candidate length (verified, #40860) and
	// full attention's later rounds trimmed to its own hit (ruleHit).
	// The first constructor keeps its older rules (drop in the first
	// round only, trim to whole blocks).
	sized    bool
	verified []bool
	ruleHit  []int // per rule: its last lookup's hit, in tokens
	// fine: enable_partial_hash_hits (a Mamba align group with a block
	// above the hash block, every other rule fine-grained or at the
	// hash block): the alignment is the hash block.
	fine bool
	// eagle: use_eagle (MTP/EAGLE drafting): each rule's first lookup
	// gets the one-block margin and the attention rules drop their last
	// matched block; mambaEagle is how the Mamba rule treats it.
	eagle      bool
	eagleRule  []bool // per rule: its spec group's use_eagle
	mambaEagle EagleMamba
	// keepOnMiss: a rule that is not downward-closed (a Mamba mode, a
	// sliding window) finding nothing leaves the candidate as it was
	// instead of cutting it to 0 (closed PR #47491's `continue`, never
	// merged): the attention hit survives without the group's blocks.
	keepOnMiss bool
	// maxOverGroups: each rule looks up alone and the hit is the deepest
	// (#44243's find_longest_cache_hit_per_group and max(per_group_hits),
	// kv_cache_coordinator.py and scheduler.py @ 55911db58): a KV
	// connector was to supply what the other groups lack.
	maxOverGroups bool
}

// SetMaxOverGroups turns on #44243's lookup for a KV connector on a
// hybrid: every group's own hit, the hit length their maximum.
func (c *HybridCoordinator) SetMaxOverGroups() { c.maxOverGroups = true }

// SetKeepAttentionOnMiss turns on closed PR #47491's rule: a zero hit
// from a rule that is not downward-closed is skipped.
func (c *HybridCoordinator) SetKeepAttentionOnMiss() { c.keepOnMiss = true }

// SetEagle turns the EAGLE drop on (MTP or EAGLE drafting) with the Mamba
// rule's treatment m, for every rule. A coordinator with fine-grained
// hits needs EnableEagle.
func (c *HybridCoordinator) SetEagle(m EagleMamba) {
	c.eagle, c.mambaEagle = true, m
	for i := range c.eagleRule {
		c.eagleRule[i] = true
	}
}

// EnableEagle turns the EAGLE drop on for the rules holding a group of
// flagged (KVCacheGroupSpec.is_eagle_group), or for every rule when none
// is flagged (KVCacheCoordinator.__init__'s fallback and
// verify_and_split_kv_cache_groups, kv_cache_coordinator.py @
// 6adad0876); m is the Mamba rule's treatment. It refuses a coordinator
// with fine-grained hash hits: there vLLM's margin and drop are one hash
// block (the same file and FullAttentionManager,
// single_type_kv_cache_manager.py), which the block-counting rules do
// not model.
func (c *HybridCoordinator) EnableEagle(m EagleMamba, flagged ...int32) error {
	if c.fine && m != EagleMambaUnmargined {
		// Fine-grained hits came with #46384, whose coordinator gives
		// the Mamba group no margin (lookUpFine).
		return fmt.Errorf("EAGLE drop with fine-grained hash hits (hash block %d) needs #46384's Mamba rule (no margin, no drop)", c.hashBlock)
	}
	for _, g := range flagged {
		if g < 0 || int(g) >= len(c.hit) {
			return fmt.Errorf("EAGLE group %d of %d groups", g, len(c.hit))
		}
	}
	c.SetEagle(m)
	if len(flagged) == 0 {
		return nil
	}
	for i, r := range c.rules {
		c.eagleRule[i] = false
		for _, g := range r.Groups {
			c.eagleRule[i] = c.eagleRule[i] || slices.Contains(flagged, g)
		}
	}
	return nil
}

// FirstRuleHit is the last lookup's hit by the first rule alone (full
// attention's, when the layout has it), in tokens: what the other groups'
// rules (a Mamba mode's state at the hit's end) cut it down from.
func (c *HybridCoordinator) FirstRuleHit() int { return c.first }

// Alignment is alignment_tokens, the unit every hit is a multiple of
// (_cache_hit_alignment_tokens, kv_cache_coordinator.py @ 6adad0876).
func (c *HybridCoordinator) Alignment() int { return c.alignment }

// FineGrained is enable_partial_hash_hits: whether the hash block is the
// alignment (a Mamba align group's block above it).
func (c *HybridCoordinator) FineGrained() bool { return c.fine }

// NewHybridCoordinator takes the rules over groups 0..numGroups-1, each
// group in exactly one rule, all of one block size, which is then the
// hash block too.
func NewHybridCoordinator(numGroups int, rules []HitGroup) (*HybridCoordinator, error) {
	if len(rules) == 0 {
		return nil, fmt.Errorf("no hit rules")
	}
	bs := rules[0].Rule.BlockSize()
	for _, r := range rules {
		if r.Rule.BlockSize() != bs {
			// One hash per block of every group: different block sizes
			// need the hash block (NewHybridCoordinatorAt).
			return nil, fmt.Errorf("hit rules with block sizes %d and %d: one block size only (NewHybridCoordinatorAt takes several)", bs, r.Rule.BlockSize())
		}
	}
	return newHybridCoordinator(numGroups, bs, rules, false, false)
}

// NewHybridCoordinatorAt takes rules of any block sizes that are
// multiples of hashBlockSize (block_pool.hash_block_size, the gcd of the
// groups' blocks under prefix caching with every Mamba group in align
// mode, else their lcm: resolve_kv_cache_block_sizes, kv_cache_utils.py @
// 6adad0876); lookups then take the request's hashes at that size. The
// hit alignment is _cache_hit_alignment_tokens: the lcm of the block
// sizes (scheduler_block_size), or the hash block when fine-grained hits
// apply (HybridKVCacheCoordinator.__init__, kv_cache_coordinator.py @
// 6adad0876, #46384 and #51843): a MambaHit in align mode with a block
// above the hash block, and every rule other than FullAttention and
// MambaHit at the hash block. A sliding window's alignment must be a
// multiple of its block (SlidingWindowManager asserts it).
func NewHybridCoordinatorAt(numGroups, hashBlockSize int, rules []HitGroup) (*HybridCoordinator, error) {
	return newHybridCoordinator(numGroups, hashBlockSize, rules, true, false)
}

// newHybridCoordinator builds the coordinator; coarse keeps fine-grained
// hits off whatever the layout (a release before #46384).
func newHybridCoordinator(numGroups, hashBlock int, rules []HitGroup, sized, coarse bool) (*HybridCoordinator, error) {
	if hashBlock <= 0 {
		return nil, fmt.Errorf("hash block size %d", hashBlock)
	}
	c := &HybridCoordinator{hit: make([][]int32, numGroups), looked: make([]bool, len(rules)), alignment: 1, hashBlock: hashBlock, sized: sized}
	seen := make([]bool, numGroups)
	for _, r := range rules {
		if r.Rule.DownwardClosed() {
			c.rules = append(c.rules, r)
		}
	}
	for _, r := range rules {
		if !r.Rule.DownwardClosed() {
			c.rules = append(c.rules, r)
		}
	}
	for _, r := range c.rules {
		bs := r.Rule.BlockSize()
		if bs <= 0 || len(r.Groups) == 0 {
			return nil, fmt.Errorf("hit rule %T: block size %d over groups %v", r.Rule, bs, r.Groups)
		}
		if bs%hashBlock != 0 {
			return nil, fmt.Errorf("hit rule %T: block size %d is not a multiple of the hash block size %d", r.Rule, bs, hashBlock)
		}
		c.alignment = lcm(c.alignment, bs)
		for _, g := range r.Groups {
			if g < 0 || int(g) >= numGroups || seen[g] {
				return nil, fmt.Errorf("group %d is out of range or in two hit rules", g)
			}
			seen[g] = true
		}
	}
	for g, ok := range seen {
		if !ok {
			return nil, fmt.Errorf("group %d has no hit rule", g)
		}
	}
	sched := c.alignment
	c.alignment, c.fine = cacheHitAlignment(c.rules, hashBlock)
	if coarse && c.fine {
		c.alignment, c.fine = sched, false
	}
	for _, r := range c.rules {
		if err := checkAlignment(r, c.alignment, hashBlock, sched); err != nil {
			return nil, err
		}
		c.dst = append(c.dst, make([][]int32, len(r.Groups)))
	}
	c.views = make([][]BlockHash, len(c.rules))
	c.viewed = make([]bool, len(c.rules))
	c.verified = make([]bool, len(c.rules))
	c.ruleHit = make([]int, len(c.rules))
	c.eagleRule = make([]bool, len(c.rules))
	return c, nil
}

// cacheHitAlignment is _cache_hit_alignment_tokens for rules over hashes
// of hashBlock tokens, and whether fine-grained hits are on
// (HybridKVCacheCoordinator.__init__, kv_cache_coordinator.py @
// 6adad0876): on with a Mamba align group whose block is above the hash
// block (has_partial_mamba_group), unless a manager without fine-grained
// lookups has a block above it (#51843); the alignment is then the hash
// block, else the lcm of the blocks (scheduler_block_size).
func cacheHitAlignment(rules []HitGroup, hashBlock int) (alignment int, fine bool) {
	alignment = 1
	for _, r := range rules {
		alignment = lcm(alignment, r.Rule.BlockSize())
		if m, ok := r.Rule.(MambaHit); ok && m.Mode == MambaAlign && r.Rule.BlockSize() > hashBlock {
			fine = true
		}
	}
	for _, r := range rules {
		if !fineGrainedRule(r.Rule) && r.Rule.BlockSize() != hashBlock {
			fine = false
		}
	}
	if fine {
		return hashBlock, true
	}
	return alignment, false
}

// FineGrainedHits reports whether vLLM's hybrid coordinator turns
// fine-grained hits on for rules over hashes of hashBlock tokens
// (cacheHitAlignment).
func FineGrainedHits(rules []HitGroup, hashBlock int) bool {
	_, fine := cacheHitAlignment(rules, hashBlock)
	return fine
}

// fineGrainedRule: supports_fine_grained_hash_lookup (FullAttentionManager
// and MambaManager, single_type_kv_cache_manager.py @ 6adad0876).
func fineGrainedRule(r HitRule) bool {
	switch r.(type) {
	case FullAttention, MambaHit:
		return true
	}
	return false
}

func lcm(a, b int) int {
	x, y := a, b
	for y != 0 {
		x, y = y, x%y
	}
	return a / x * b
}

// FindLongestCacheHit returns the hit length in tokens, at most
// maxLength, for a request whose block hashes (at the hash block size)
// are hashes; HitBlocks then gives each group's blocks.
func (c *HybridCoordinator) FindLongestCacheHit(p *BlockPool, hashes []BlockHash, maxLength int) int {
	clear(c.looked)
	if c.sized {
		clear(c.viewed)
		clear(c.verified)
	}
	for g := range c.hit {
		c.hit[g] = c.hit[g][:0]
	}
	if c.maxOverGroups {
		return c.findPerGroup(p, hashes, max(maxLength, 0))
	}
	simple := len(c.rules) == 2 && c.rules[0].Rule.DownwardClosed()
	hitLen := max(maxLength, 0)
	c.rounds = 0
	for {
		c.rounds++
		cur := hitLen
		for i, r := range c.rules {
			bs := r.Rule.BlockSize()
			if r.Rule.DownwardClosed() && c.looked[i] {
				if c.sized {
					cur = min(cur, c.ruleHit[i])
				} else {
					cur = cur / bs * bs // trimmed at the end
				}
				continue
			}
			drop := c.eagle && c.eagleRule[i] && c.rounds == 1
			if c.sized {
				drop = c.eagle && c.eagleRule[i] && !c.verified[i]
			}
			n := c.lookUp(i, p, hashes, cur, max(maxLength, 0), drop)
			if c.sized {
				// Each rule drops once per candidate length: a shorter
				// candidate from a lookup without the drop calls for the
				// drops again (eagle_verified, #40860).
				if drop {
					c.verified[i] = true
				} else if n < cur {
					clear(c.verified)
				}
			}
			if n == 0 && c.keepOnMiss && !r.Rule.DownwardClosed() {
				continue // #47491: the group's miss does not cut the hit
			}
			cur = n
			if i == 0 && c.rounds == 1 {
				c.first = cur
			}
		}
		if cur >= hitLen {
			break
		}
		hitLen = cur
		if simple {
			break
		}
	}
	// vLLM trims only the first (full-attention) spec's groups, to
	// ⌈hit/block⌉ blocks; every downward-closed rule is trimmed here,
	// which differs only for two full-attention specs, a layout statesim
	// does not build.
	for _, r := range c.rules {
		if !r.Rule.DownwardClosed() {
			continue
		}
		for _, g := range r.Groups {
			c.hit[g] = c.hit[g][:min(len(c.hit[g]), mambaCeilDiv(hitLen, r.Rule.BlockSize()))]
		}
	}
	return hitLen
}

// dropHitRule is a rule that applies the EAGLE drop itself, as vLLM's
// finders do given drop_eagle_block: FullAttention drops its last
// matched block before cutting to the alignment, a sliding window needs
// one more contiguous block and checks alignment after the drop.
type dropHitRule interface {
	// findLongestCacheHitDrop is FindLongestCacheHit with the drop: the
	// hit in blocks after it.
	findLongestCacheHitDrop(p *BlockPool, hashes []BlockHash, maxLength, alignment int, groups []int32, dst [][]int32) int
}

// findLongestCacheHitDrop: phase 1's run, less its last block, cut to
// the alignment (FullAttentionManager.find_longest_cache_hit,
// single_type_kv_cache_manager.py @ 6adad0876). With the alignment at the
// block it is the coordinator's older drop of one block after the lookup.
func (f FullAttention) findLongestCacheHitDrop(p *BlockPool, hashes []BlockHash, maxLength, alignment int, groups []int32, dst [][]int32) int {
	n := f.FindLongestCacheHit(p, hashes, maxLength, f.Block, groups, dst)
	if n > 0 {
		n--
	}
	for n > 0 && n*f.Block%alignment != 0 {
		n--
	}
	for j := range dst {
		dst[j] = dst[j][:n]
	}
	return n
}

// view is the lookup's hashes at rule i's block size bs, above the hash
// block.
func (c *HybridCoordinator) view(i, bs int, hashes []BlockHash) []BlockHash {
	if !c.viewed[i] {
		c.views[i] = BlockHashesAt(c.views[i][:0], hashes, c.hashBlock, bs)
		c.viewed[i] = true
	}
	return c.views[i]
}

// lookUp runs rule i up to cur tokens (less the EAGLE drop when eagle),
// leaves its groups' blocks in c.hit and returns its hit in tokens.
func (c *HybridCoordinator) lookUp(i int, p *BlockPool, hashes []BlockHash, cur, maxLength int, eagle bool) int {
	if c.fine {
		if hit, ok := c.lookUpFine(i, p, hashes, cur, maxLength, eagle); ok {
			return hit
		}
	}
	r := c.rules[i]
	bs := r.Rule.BlockSize()
	dst := c.dst[i]
	for j, g := range r.Groups {
		dst[j] = c.hit[g]
	}
	ceiling, drop := cur, false
	if eagle {
		ceiling, drop = eagleCeiling(r.Rule, c.mambaEagle, cur, maxLength, bs)
	}
	n := 0
	if ceiling > 0 {
		h := hashes
		if bs != c.hashBlock {
			h = c.view(i, bs, hashes)
		}
		var dr dropHitRule
		if drop {
			dr, _ = r.Rule.(dropHitRule)
		}
		if dr != nil {
			n, drop = dr.findLongestCacheHitDrop(p, h, ceiling, c.alignment, r.Groups, dst), false
		} else {
			n = r.Rule.FindLongestCacheHit(p, h, ceiling, c.alignment, r.Groups, dst)
		}
	} else {
		for j := range dst {
			dst[j] = dst[j][:0]
		}
	}
	if drop && n > 0 {
		n--
		for n > 0 && n*bs%c.alignment != 0 {
			n--
		}
		for j := range dst {
			dst[j] = dst[j][:n]
		}
	}
	for j, g := range r.Groups {
		c.hit[g] = dst[j]
	}
	c.looked[i] = true
	c.ruleHit[i] = n * bs
	return n * bs
}

// findPerGroup is find_longest_cache_hit_per_group: each rule looks up
// up to maxLength on its own (its EAGLE drop included), its groups keep
// their own blocks, and the hit is the longest of them (#44243).
func (c *HybridCoordinator) findPerGroup(p *BlockPool, hashes []BlockHash, maxLength int) int {
	c.rounds, c.first = 1, 0
	hitLen := 0
	for i := range c.rules {
		n := c.lookUp(i, p, hashes, maxLength, maxLength, c.eagle && c.eagleRule[i])
		if i == 0 {
			c.first = n
		}
		hitLen = max(hitLen, n)
	}
	return hitLen
}

// Miss leaves the coordinator as a lookup that hits nothing in any group
// does: for a request none of whose blocks can be cached yet.
func (c *HybridCoordinator) Miss() {
	for g := range c.hit {
		c.hit[g] = c.hit[g][:0]
	}
	c.first = 0
}

// HitBlocks is group g's part of the last hit; valid until the next call.
func (c *HybridCoordinator) HitBlocks(g int32) []int32 { return c.hit[g] }

// NumGroups is the number of KV cache groups.
func (c *HybridCoordinator) NumGroups() int { return len(c.hit) }

// FirstHitMismatch is the first position of blocks (the leading blocks of
// a prefix hit in attention group g of the pool, for a reader whose
// block hashes are hashes) whose block does not serve it: by the cache's
// record another group or prefix, or bytes that are not the full,
// untainted K/V of the record's writer. It returns len(blocks) when every
// block serves; the caller explains a mismatch from the full records (a
// hit's blocks are checked once each, most of a long prompt's, so the
// scan reads the records in place).
func FirstHitMismatch(p *BlockPool, ps *Provenances, g int32, blocks []int32, hashes []BlockHash, blockSize int) int {
	p.mustCache("FirstHitMismatch")
	rec := p.pc.rec
	for bi, b := range blocks {
		if bi >= len(hashes) {
			return bi
		}
		r := &rec[b]
		if r.Group != g || r.Hash != hashes[bi] || int(r.Tokens) != (bi+1)*blockSize {
			return bi
		}
		if pv := ps.touch(b); pv.Content != KV || pv.Writer != r.Writer || pv.Tainted || int(pv.Tokens) < blockSize {
			return bi
		}
	}
	return len(blocks)
}
