// Package half converts between float32 and IEEE 754 half precision (f16) bits, the way
// GPUs and ggml do: exactly one way, rounding to nearest even the other.
package half

import "math"

// ToF32 converts IEEE 754 half-precision bits to float32 (exactly).
func ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f: // Inf or NaN
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp == 0: // zero or subnormal: mant * 2^-24
		f := float32(mant) / (1 << 24)
		if sign != 0 {
			f = -f
		}
		return f
	default:
		return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
	}
}

// FromF32 converts a float32 to half-precision bits, rounding to nearest even.
// Values too large become ±Inf; NaN stays NaN.
func FromF32(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff {
		if mant != 0 {
			return sign | 0x7e00 | uint16(mant>>13)
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		if e < -10 {
			return sign
		}
		m := mant | 0x800000
		shift := uint(14 - e) // 14..24
		h := m >> shift
		rem := m & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && h&1 == 1) {
			h++
		}
		return sign | uint16(h)
	}
	h := uint32(e)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // may carry into the exponent, up to Inf: both correct
	}
	return sign | uint16(h)
}
