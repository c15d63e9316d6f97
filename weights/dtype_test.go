package weights

import (
	"math"
	"testing"
)

func TestF16AllValuesRoundTrip(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		f := F16ToF32(uint16(h))
		back := F32ToF16(f)
		if f != f { // NaN stays NaN
			if back&0x7c00 != 0x7c00 || back&0x3ff == 0 {
				t.Fatalf("NaN %#04x -> %#04x", h, back)
			}
			continue
		}
		if back != uint16(h) {
			t.Fatalf("%#04x -> %v -> %#04x", h, f, back)
		}
	}
}

func TestF16Rounding(t *testing.T) {
	cases := []struct {
		f    float32
		want uint16
	}{
		{1, 0x3c00},
		{-2, 0xc000},
		{65504, 0x7bff},
		{65520, 0x7c00},                          // halfway to the next binade: rounds to Inf
		{65519, 0x7bff},                          // below halfway
		{float32(math.Inf(-1)), 0xfc00},          // -Inf
		{1 + 1.0/2048, 0x3c00},                   // tie: to even (down)
		{1 + 3.0/2048, 0x3c02},                   // tie: to even (up)
		{float32(math.Ldexp(1, -24)), 0x0001},    // smallest subnormal
		{float32(math.Ldexp(1, -25)), 0x0000},    // half of it: tie to even (0)
		{float32(math.Ldexp(1.5, -25)), 0x0001},  // above half
		{float32(math.Ldexp(1, -14)), 0x0400},    // smallest normal
		{float32(math.Ldexp(1023, -24)), 0x03ff}, // largest subnormal
		{float32(math.Ldexp(2047, -25)), 0x0400}, // rounds up into the normals
		{float32(math.Ldexp(1, -40)), 0x0000},    // underflow
		{-float32(math.Ldexp(1, -40)), 0x8000},   // negative underflow keeps the sign
	}
	for _, c := range cases {
		if got := F32ToF16(c.f); got != c.want {
			t.Errorf("F32ToF16(%v) = %#04x, want %#04x", c.f, got, c.want)
		}
	}
}

func TestBF16(t *testing.T) {
	for _, c := range []struct {
		f    float32
		want uint16
	}{
		{1, 0x3f80},
		{-2, 0xc000},
		{math.Float32frombits(0x3f808000), 0x3f80}, // tie to even (down)
		{math.Float32frombits(0x3f818000), 0x3f82}, // tie to even (up)
		{math.Float32frombits(0x3f808001), 0x3f81},
		{float32(math.Inf(1)), 0x7f80},
	} {
		if got := F32ToBF16(c.f); got != c.want {
			t.Errorf("F32ToBF16(%v) = %#04x, want %#04x", c.f, got, c.want)
		}
		if got := BF16ToF32(c.want); F32ToBF16(got) != c.want {
			t.Errorf("BF16 %#04x does not round trip", c.want)
		}
	}
	if nan := F32ToBF16(float32(math.NaN())); BF16ToF32(nan) == BF16ToF32(nan) {
		t.Errorf("NaN became %#04x", nan)
	}
}
