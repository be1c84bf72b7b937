package statecache

import "fmt"

// Describe says in words what a block holds, for violation details and
// explain. self, when it is the block's writer, is called "own".
func (p Provenance) Describe(self RequestID) string {
	switch {
	case p.Content == Zero:
		return "zeros (never written)"
	case p.Clobber:
		return fmt.Sprintf("bytes clobbered by request %d's wrapped write for slot %d at step %d", p.Writer, p.Intended, p.Step)
	case p.Content == KV:
		return fmt.Sprintf("KV of request %d (step %d)", p.Writer, p.Step)
	case p.Writer == self && self >= 0:
		t := ""
		if p.Tainted {
			t = ", tainted"
		}
		return fmt.Sprintf("own state after %d tokens (step %d)%s", p.Tokens, p.Step, t)
	}
	return fmt.Sprintf("state of request %d after %d tokens (step %d)", p.Writer, p.Tokens, p.Step)
}
