package quant

import (
	"encoding/binary"
	"math"

	"github.com/wspec/wspec/weights/half"
)

// The 32-value types (ggml's "legacy" quants): one f16 scale (and an f16 offset for _1) per
// block; value j's quant is the low nibble of qs[j] for j < 16 and the high nibble of
// qs[j - 16] after, with a fifth bit in qh for Q5.

func f16(b []byte) float32       { return half.ToF32(binary.LittleEndian.Uint16(b)) }
func putF16(b []byte, f float32) { binary.LittleEndian.PutUint16(b, half.FromF32(f)) }

func decodeQ8_0(b []byte, y []float32) {
	d := f16(b)
	for j := range 32 {
		y[j] = float32(int8(b[2+j])) * d
	}
}

func encodeQ8_0(x []float32, b []byte) {
	var amax float32
	for _, v := range x[:32] {
		amax = max(amax, abs(v))
	}
	d := amax / 127
	id := inv(d)
	putF16(b, d)
	for j := range 32 {
		b[2+j] = byte(int8(math.Round(float64(x[j] * id))))
	}
}

// nibbles decodes the 4-bit quants of a 32-value block (qs: 16 bytes) plus the fifth bits of
// qh (0 for Q4) into q.
func nibbles(qs []byte, qh uint32, q *[32]int32) {
	for j := range 16 {
		q[j] = int32(qs[j]&0xf) | int32((qh>>j)<<4&0x10)
		q[j+16] = int32(qs[j]>>4) | int32((qh>>(j+12))&0x10)
	}
}

func decodeQ4_0(b []byte, y []float32) {
	var q [32]int32
	nibbles(b[2:18], 0, &q)
	d := f16(b)
	for j := range 32 {
		y[j] = float32(q[j]-8) * d
	}
}

func decodeQ4_1(b []byte, y []float32) {
	var q [32]int32
	nibbles(b[4:20], 0, &q)
	d, m := f16(b), f16(b[2:])
	for j := range 32 {
		y[j] = float32(q[j])*d + m
	}
}

func decodeQ5_0(b []byte, y []float32) {
	var q [32]int32
	nibbles(b[6:22], binary.LittleEndian.Uint32(b[2:]), &q)
	d := f16(b)
	for j := range 32 {
		y[j] = float32(q[j]-16) * d
	}
}

func decodeQ5_1(b []byte, y []float32) {
	var q [32]int32
	nibbles(b[8:24], binary.LittleEndian.Uint32(b[4:]), &q)
	d, m := f16(b), f16(b[2:])
	for j := range 32 {
		y[j] = float32(q[j])*d + m
	}
}

// signedMax is the value of largest magnitude in x (the first of equals), with its sign.
func signedMax(x []float32) float32 {
	var amax, mx float32
	for _, v := range x {
		if abs(v) > amax {
			amax, mx = abs(v), v
		}
	}
	return mx
}

// minMax is the least and the greatest value of x.
func minMax(x []float32) (float32, float32) {
	lo, hi := float32(math.MaxFloat32), float32(-math.MaxFloat32)
	for _, v := range x {
		lo, hi = min(lo, v), max(hi, v)
	}
	return lo, hi
}

// packNibbles writes quants q (0..31) as a 32-value block's qs and returns its qh.
func packNibbles(q *[32]uint8, qs []byte) uint32 {
	var qh uint32
	for j := range 16 {
		qs[j] = q[j]&0xf | (q[j+16]&0xf)<<4
		qh |= uint32(q[j]>>4&1)<<j | uint32(q[j+16]>>4&1)<<(j+16)
	}
	return qh
}

// symmetric quantizes a 32-value block as d (q - levels/2), ggml's Q4_0 and Q5_0: the value of
// largest magnitude maps to -levels/2.
func symmetric(x []float32, levels int) (float32, [32]uint8) {
	d := signedMax(x[:32]) / float32(-levels/2)
	id := inv(d)
	var q [32]uint8
	for j := range 32 {
		q[j] = uint8(min(levels-1, int(int8(x[j]*id+(float32(levels/2)+0.5)))))
	}
	return d, q
}

// affine quantizes a 32-value block as d q + min, ggml's Q4_1 and Q5_1.
func affine(x []float32, levels int, clamp bool) (float32, float32, [32]uint8) {
	lo, hi := minMax(x[:32])
	d := (hi - lo) / float32(levels-1)
	id := inv(d)
	var q [32]uint8
	for j := range 32 {
		v := (x[j]-lo)*id + 0.5
		if clamp { // Q4_1 clamps through int8 as ggml does; Q5_1 converts straight to uint8
			q[j] = uint8(min(levels-1, int(int8(v))))
		} else {
			q[j] = uint8(v)
		}
	}
	return d, lo, q
}

func encodeQ4_0(x []float32, b []byte) {
	d, q := symmetric(x, 16)
	putF16(b, d)
	packNibbles(&q, b[2:18])
}

func encodeQ5_0(x []float32, b []byte) {
	d, q := symmetric(x, 32)
	putF16(b, d)
	binary.LittleEndian.PutUint32(b[2:], packNibbles(&q, b[6:22]))
}

func encodeQ4_1(x []float32, b []byte) {
	d, m, q := affine(x, 16, true)
	putF16(b, d)
	putF16(b[2:], m)
	packNibbles(&q, b[4:20])
}

func encodeQ5_1(x []float32, b []byte) {
	d, m, q := affine(x, 32, false)
	putF16(b, d)
	putF16(b[2:], m)
	binary.LittleEndian.PutUint32(b[4:], packNibbles(&q, b[8:24]))
}

func abs(v float32) float32 { return float32(math.Abs(float64(v))) }

// inv is 1/d, 0 for 0.
func inv(d float32) float32 {
	if d == 0 {
		return 0
	}
	return 1 / d
}
