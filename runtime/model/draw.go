package model

import (
	"encoding/binary"
	"math"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/batch"
)

// Drafting heads (EAGLE, EAGLE-3, Medusa) end in argmax_rows with GUMBEL: for a sequence
// sampled at a temperature they draw their drafts from softmax(logits / T) on the device and
// copy those logits out, and the host returns that distribution as the drafts' q.

// drawParamBytes is one program's argmax_rows draw params: 1/T, the key's two words, the
// position.
const drawParamBytes = 16

// drawKey is the head's own random key for a sequence sampled with s: the target's key
// (Seed, Choice) mixed (splitmix64), so the drafts' noise is independent of the draws the
// target's sampler makes with its key.
func drawKey(s batch.Sampling) uint64 {
	z := s.Seed ^ uint64(s.Choice)*0x9e3779b97f4a7c15 ^ 0xd1b54a32d192ed03
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// drawParams is a program's draw params: the plain argmax when invT is 0, else a draw at
// 1/T = invT keyed by key and the drafted token's position.
func drawParams(invT float32, key uint64, pos int) []byte {
	return runtime.U32Bytes([]uint32{math.Float32bits(invT), uint32(key), uint32(key >> 32), uint32(pos)})
}

// distribution writes into q (the target's vocabulary) softmax(logits / T) of a head's
// logits row (little-endian f32, its own vocabulary), the distribution argmax_rows sampled
// the draft from; with d2t (EAGLE-3), draft id i goes to target id i + d2t[i], the rest stay 0.
func distribution(row []byte, invT float32, d2t []int64, q []float32) {
	n := len(row) / 4
	z := make([]float64, n)
	mx := math.Inf(-1)
	for i := range n {
		z[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(row[4*i:])) * invT)
		mx = max(mx, z[i])
	}
	sum := 0.0
	for i := range z {
		z[i] = math.Exp(z[i] - mx)
		sum += z[i]
	}
	for i, v := range z {
		id := i
		if d2t != nil {
			id += int(d2t[i])
		}
		q[id] = float32(v / sum)
	}
}
