package statecache

import "fmt"

// What a Mamba state block holds is its Provenance (writer, tokens
// absorbed, step, taint) and, once cached, its PrefixRecord (group, the
// token prefix by hash, tokens, the request that cached it). A request's
// prefix hashes are a function of its tokens, so a state written by W
// after T tokens holds W's prefix through T: when W cached the block with
// T tokens, the record's hash is that prefix.

// MambaRestoreMismatch checks a state restored from the prefix cache: the
// reader needs group g's state of prefix h after tokens tokens, reached
// through block b whose cache record is rec and whose bytes hold p. It
// returns why the block does not serve, naming both sides, or "".
func MambaRestoreMismatch(b int32, p Provenance, rec PrefixRecord, g int32, h BlockHash, tokens int) string {
	if err := rec.Serves(g, h, tokens); err != nil {
		return fmt.Sprintf("block %d %v; the bytes hold %s", b, err, p.Describe(-1))
	}
	if p.Content != State || p.Clobber || p.Writer != rec.Writer || p.Tokens != rec.Tokens {
		return fmt.Sprintf("the cache says block %d holds request %d's state of prefix %#x after %d tokens (cached at step %d), the bytes hold %s",
			b, rec.Writer, uint64(rec.Hash), rec.Tokens, rec.Step, p.Describe(-1))
	}
	return ""
}

// MambaCopyMismatch checks the state a request continues from a block
// other than its running one (align mode's copy source, the previous
// step's running block; all mode's block holding the last computed
// token): it must hold the reader's own state after tokens tokens.
func MambaCopyMismatch(b int32, p Provenance, reader RequestID, tokens int) string {
	if p.Content == State && !p.Clobber && p.Writer == reader && int(p.Tokens) == tokens {
		return ""
	}
	return fmt.Sprintf("request %d continues its state after %d tokens from block %d, which holds %s", reader, tokens, b, p.Describe(reader))
}
