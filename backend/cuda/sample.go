//go:build cuda

package cuda

import "gorgonia.org/cu"

// sample computes the sampled rows' log-probs on the device (final norm of
// each row's last token, LM head, log-softmax), downloads them and samples
// each row's next token on the host as the mock does (record).
func (b *Backend) sample(samples []sample, hid cu.DevicePtr) error {
	S := len(samples)
	if S == 0 {
		return nil
	}
	H, V := b.cfg.Shape.HiddenSize, b.cfg.Shape.VocabSize
	idx := make([]int32, S)
	for i, sp := range samples {
		idx[i] = int32(sp.tok)
	}
	var pIdx, normed, logits, logp cu.DevicePtr
	var err error
	if pIdx, err = put(b, "sampleIdx", idx); err != nil {
		return err
	}
	if normed, err = b.f32("normed", S*H); err != nil {
		return err
	}
	if logits, err = b.f32("logits", S*V); err != nil {
		return err
	}
	if logp, err = b.f32("logp", S*V); err != nil {
		return err
	}
	l := &launcher{d: b.dev}
	l.launch("rms_norm", [3]int{S, 1, 1}, block128, normed, hid, b.finalNorm, pIdx, H, float32(normEps))
	l.matmul(logits, normed, b.lmHead, S, V, H, H, V)
	l.launch("log_softmax", [3]int{S, 1, 1}, [3]int{256, 1, 1}, logp, logits, V)
	if l.err != nil {
		return l.err
	}
	host := make([]float32, S*V)
	if err := Download(host, logp); err != nil {
		return err
	}
	record(samples, host, V, b.cfg.Temperature)
	b.stats.TokensSampled += int64(S)
	return nil
}
