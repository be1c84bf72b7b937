package statecache

import "fmt"

// RequestID identifies a request; ids are assigned in arrival order, as
// vLLM's engine does.
type RequestID int64

// NoRequest marks a block nobody holds or nobody has written.
const NoRequest RequestID = -1

// NullBlock is the reserved block 0: never handed out.
const NullBlock = 0

// BlockPool is vLLM's block pool: a FIFO free queue over block ids
// 1..n-1 plus the holder of every block, which makes conservation ("no block
// leaked or held twice") checkable in O(1) per operation.
type BlockPool struct {
	ring   []int32 // free queue as a ring buffer
	head   int
	nFree  int
	holder []RequestID // holder[b], NoRequest when free
	// HighWater is the highest block id ever handed out.
	HighWater int32
}

// NewBlockPool returns a pool of numBlocks ids with block 0 reserved. The
// initial free queue is 1, 2, ..., numBlocks-1.
func NewBlockPool(numBlocks int) *BlockPool {
	if numBlocks < 2 {
		numBlocks = 2
	}
	p := &BlockPool{ring: make([]int32, numBlocks-1), holder: make([]RequestID, numBlocks)}
	for i := range p.ring {
		p.ring[i] = int32(i + 1)
	}
	p.nFree = len(p.ring)
	for i := range p.holder {
		p.holder[i] = NoRequest
	}
	return p
}

// NumBlocks is the pool size including the null block.
func (p *BlockPool) NumBlocks() int { return len(p.holder) }

// NumFree is the free-queue length.
func (p *BlockPool) NumFree() int { return p.nFree }

// NumHeld is the number of blocks held by requests.
func (p *BlockPool) NumHeld() int { return len(p.ring) - p.nFree }

// Holder is the request holding block b, or NoRequest.
func (p *BlockPool) Holder(b int32) RequestID { return p.holder[b] }

// Pop takes the block at the head of the free queue for req.
func (p *BlockPool) Pop(req RequestID) (int32, error) {
	if p.nFree == 0 {
		return 0, fmt.Errorf("block pool: free queue empty")
	}
	b := p.ring[p.head]
	p.head++
	if p.head == len(p.ring) {
		p.head = 0
	}
	p.nFree--
	if h := p.holder[b]; h != NoRequest {
		return 0, fmt.Errorf("block pool: block %d on the free queue is held by request %d", b, h)
	}
	p.holder[b] = req
	if b > p.HighWater {
		p.HighWater = b
	}
	return b, nil
}

// Push returns block b, held by req, to the tail of the free queue.
func (p *BlockPool) Push(req RequestID, b int32) error {
	if b <= NullBlock || int(b) >= len(p.holder) {
		return fmt.Errorf("block pool: request %d frees invalid block %d", req, b)
	}
	if h := p.holder[b]; h != req {
		return fmt.Errorf("block pool: request %d frees block %d held by %d", req, b, h)
	}
	if p.nFree == len(p.ring) {
		return fmt.Errorf("block pool: free queue overflow freeing block %d", b)
	}
	tail := p.head + p.nFree
	if tail >= len(p.ring) {
		tail -= len(p.ring)
	}
	p.ring[tail] = b
	p.nFree++
	p.holder[b] = NoRequest
	return nil
}

// FreeQueue returns the free queue from head to tail (for tests and plots).
func (p *BlockPool) FreeQueue() []int32 {
	out := make([]int32, p.nFree)
	for i := range out {
		j := p.head + i
		if j >= len(p.ring) {
			j -= len(p.ring)
		}
		out[i] = p.ring[j]
	}
	return out
}
