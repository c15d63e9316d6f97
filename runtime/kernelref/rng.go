// Package kernelref holds pure-Go reference implementations of every WGSL kernel: the ground
// truth the portability suite (wspec selftest) checks each adapter against, so they favour
// clarity (and float64 accumulation) over speed. The reference model built from them, the
// Llama forward pass and a batched step, is runtime/ref (tests only).
package kernelref

import "math"

// The counter-based random generator shared by the device kernels (wgsl/common.wgsl) and
// this package. A draw is a pure function of (seed, sequence, position, draw index), so a
// seeded run gives the same numbers on any adapter and in any order of evaluation.
//
// pcgHash is the PCG-RXS-M-XS 32-bit output permutation used as a hash
// (Jarzynski & Olano, "Hash Functions for GPU Rendering", 2020).
func pcgHash(v uint32) uint32 {
	state := v*747796405 + 2891336453
	word := ((state >> ((state >> 28) + 4)) ^ state) * 277803737
	return (word >> 22) ^ word
}

// RandU32 returns the 32-bit random word for the key (seed, seq, pos, draw).
func RandU32(seed uint64, seq, pos, draw uint32) uint32 {
	h := pcgHash(uint32(seed))
	h = pcgHash(h ^ uint32(seed>>32))
	h = pcgHash(h ^ seq)
	h = pcgHash(h ^ pos)
	return pcgHash(h ^ draw)
}

// RandUniform returns a float in the open interval (0, 1) for the key: 24 random bits,
// offset by half a step so that log(u) and log(-log(u)) are always finite.
func RandUniform(seed uint64, seq, pos, draw uint32) float32 {
	return (float32(RandU32(seed, seq, pos, draw)>>8) + 0.5) * (1.0 / 16777216.0)
}

// Gumbel returns -log(-log(u)) for the key's uniform u: adding it to log-probabilities and
// taking the argmax samples from the distribution (the Gumbel-max trick), which a GPU does
// in one parallel reduction instead of a prefix sum over the vocabulary.
func Gumbel(seed uint64, seq, pos, draw uint32) float32 {
	u := float64(RandUniform(seed, seq, pos, draw))
	return float32(-math.Log(-math.Log(u)))
}
