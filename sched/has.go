package sched

// Has reports whether PR num is in v: in its release, or added by its
// patches and not removed. False for the V0 control and for a PR statesim
// does not model (PatchNames lists those it does).
func (v Version) Has(num int) bool {
	i := prIndex(num)
	if i < 0 || v.Release() == V0 {
		return false
	}
	set := prSet(v.Release()) ^ int(v>>baseBits)
	return set&(1<<i) != 0
}
