package kernelref

// Masked is the logit a token mask gives the tokens it leaves out: batch.Masked (runtime/ref's
// tests check they are equal; this package sits below batch) and the device's MASKED in
// sample_io.wgsl.
const Masked = -1e30

// allowedBit reports whether mask allows token t (bit t%32 of word t/32).
func allowedBit(mask []uint32, t int) bool { return mask[t/32]&(1<<(t%32)) != 0 }

// ApplyMask sets the logits of row that mask leaves out to Masked, in place (as the sampler
// does after the logits processors).
func ApplyMask(row []float32, mask []uint32) {
	for t := range row {
		if !allowedBit(mask, t) {
			row[t] = Masked
		}
	}
}

// MaskQ is a draft's distribution q renormalised over the tokens mask allows (zeros when
// it puts no mass there).
func MaskQ(q []float32, mask []uint32) []float32 {
	out := make([]float32, len(q))
	var s float32
	for t, v := range q {
		if allowedBit(mask, t) {
			s += v
		}
	}
	if s <= 0 {
		return out
	}
	for t, v := range q {
		if allowedBit(mask, t) {
			out[t] = v / s
		}
	}
	return out
}
