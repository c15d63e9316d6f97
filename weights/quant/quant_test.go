package quant

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/wspec/wspec/weights/gguf"
	"github.com/wspec/wspec/weights/half"
)

// Blocks built by hand, field by field, decode to the values the block definitions give.

func TestDecodeQ8_0ByHand(t *testing.T) {
	b := make([]byte, 34)
	binary.LittleEndian.PutUint16(b, half.FromF32(0.5))
	b[2], b[3], b[33] = 0x80, 0x7f, 0xff // -128, 127, -1
	y := decode(t, gguf.Q8_0, b, 32)
	want := map[int]float32{0: -64, 1: 63.5, 31: -0.5, 2: 0}
	check(t, y, want)
}

func TestDecodeQ4Q5ByHand(t *testing.T) {
	// Q4_0: d = 2, qs[0] = 0x9f: value 0 low nibble 15 -> 2*(15-8), value 16 high nibble 9 -> 2.
	b := make([]byte, 18)
	binary.LittleEndian.PutUint16(b, half.FromF32(2))
	b[2] = 0x9f
	check(t, decode(t, gguf.Q4_0, b, 32), map[int]float32{0: 14, 16: 2, 1: -16, 17: -16})
	// Q4_1: d = 0.25, m = -1, qs[3] = 0x40: value 3 -> -1, value 19 -> 4*0.25 - 1 = 0.
	b = make([]byte, 20)
	binary.LittleEndian.PutUint16(b, half.FromF32(0.25))
	binary.LittleEndian.PutUint16(b[2:], half.FromF32(-1))
	b[4+3] = 0x40
	check(t, decode(t, gguf.Q4_1, b, 32), map[int]float32{3: -1, 19: 0})
	// Q5_0: d = 1, qh bit 2 (value 2's fifth bit) and bit 20 (value 20's), qs[2] = 0x31,
	// qs[4] = 0x0f: value 2 -> (1|16)-16 = 1, value 18 -> 3-16, value 20 -> (0|16)-16 = 0,
	// value 4 -> 15-16.
	b = make([]byte, 22)
	binary.LittleEndian.PutUint16(b, half.FromF32(1))
	binary.LittleEndian.PutUint32(b[2:], 1<<2|1<<20)
	b[6+2], b[6+4] = 0x31, 0x0f
	check(t, decode(t, gguf.Q5_0, b, 32), map[int]float32{2: 1, 18: -13, 20: 0, 4: -1, 0: -16})
	// Q5_1: d = 0.5, m = 3, qh bit 31 (value 31), qs[15] = 0xf0: value 31 -> 31*0.5 + 3.
	b = make([]byte, 24)
	binary.LittleEndian.PutUint16(b, half.FromF32(0.5))
	binary.LittleEndian.PutUint16(b[2:], half.FromF32(3))
	binary.LittleEndian.PutUint32(b[4:], 1<<31)
	b[8+15] = 0xf0
	check(t, decode(t, gguf.Q5_1, b, 32), map[int]float32{31: 18.5, 15: 3})
}

func TestDecodeQ4KQ5KByHand(t *testing.T) {
	// d = 1, dmin = 0.5; sub-block 1: scale 3, min 2 (bytes 1 and 5); sub-block 6: scale
	// 0x25 = 37 (low nibble 5 in byte 10, top bits 2 in byte 2's bits 6-7), min 0x1a = 26
	// (high nibble 0xa of byte 10, top bits 1 in byte 6's bits 6-7).
	for _, tt := range []struct {
		typ  gguf.TensorType
		size int
		qs   int // offset of qs
	}{{gguf.Q4_K, 144, 16}, {gguf.Q5_K, 176, 48}} {
		b := make([]byte, tt.size)
		binary.LittleEndian.PutUint16(b, half.FromF32(1))
		binary.LittleEndian.PutUint16(b[2:], half.FromF32(0.5))
		sc := b[4:16]
		sc[1], sc[5] = 3, 2
		sc[10] = 0xa5
		sc[2] |= 2 << 6
		sc[6] |= 1 << 6
		// Value 32 + 7 (sub-block 1, l = 7) is the high nibble of qs[7]: 9.
		b[tt.qs+7] = 0x90
		// Value 192 + 4 (sub-block 6: pair 3, low nibbles) is qs[96 + 4]'s low nibble: 11.
		b[tt.qs+96+4] = 0x0b
		want := map[int]float32{39: 3*9 - 0.5*2, 196: 37*11 - 0.5*26, 32: -1}
		if tt.typ == gguf.Q5_K {
			// Fifth bits: value 39 is pair 0, high half: qh[7] bit 1; value 196 pair 3,
			// low half: qh[4] bit 6.
			b[16+7] |= 1 << 1
			b[16+4] |= 1 << 6
			want = map[int]float32{39: 3*25 - 0.5*2, 196: 37*27 - 0.5*26, 32: -1}
		}
		check(t, decode(t, tt.typ, b, 256), want)
	}
}

func TestDecodeQ6KByHand(t *testing.T) {
	b := make([]byte, 210)
	binary.LittleEndian.PutUint16(b[208:], half.FromF32(0.25))
	sc := b[192:208]
	sc[0], sc[2], sc[11] = 4, 0xfe, 3 // 4, -2, 3
	// Value 5 (first half, q1, l = 5, scale sc[0]): ql[5] low nibble 7, qh[5] bits 0-1 = 2:
	// 39 - 32 = 7.
	b[5] = 0x07
	b[128+5] = 0x02
	// Value 128 + 32 + 17 (second half, q2, l = 17, scale sc[8 + 1 + 2]): ql[64 + 32 + 17]
	// low nibble 1, qh[32 + 17] bits 2-3 = 3: 49 - 32 = 17.
	b[64+32+17] = 0x01
	b[128+32+17] = 0x03 << 2
	// Value 32 + 3 (q2, l = 3, scale sc[2] = -2): all bits 0: -32. Value 52 (q2, l = 20,
	// scale sc[3] = 0): 0.
	check(t, decode(t, gguf.Q6_K, b, 256), map[int]float32{5: 0.25 * 4 * 7, 52: 0, 177: 0.25 * 3 * 17, 35: 0.25 * -2 * -32})
}

// Quantizing random rows and decoding them gives back each value to within the type's step.
func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, 4*256)
	for i := range x {
		x[i] = float32(rng.NormFloat64()) * 0.02
	}
	x[5] = 0.3 // an outlier
	// relative error bound per type, against the block's largest magnitude
	bound := map[gguf.TensorType]float32{gguf.Q8_0: 1.0 / 254, gguf.Q4_0: 1.0 / 14, gguf.Q4_1: 1.0 / 14,
		gguf.Q5_0: 1.0 / 30, gguf.Q5_1: 1.0 / 30, gguf.Q4_K: 1.0 / 10, gguf.Q5_K: 1.0 / 20, gguf.Q6_K: 1.0 / 40}
	for _, typ := range Types {
		b, err := Quantize(typ, x)
		if err != nil {
			t.Fatal(err)
		}
		if want, _ := typ.RowBytes(uint64(len(x))); uint64(len(b)) != want {
			t.Fatalf("%v: %d bytes, want %d", typ, len(b), want)
		}
		y := decode(t, typ, b, len(x))
		bs := typ.BlockSize()
		var rms float64
		for i := range x {
			blk := x[i/bs*bs : (i/bs+1)*bs]
			var amax float32
			for _, v := range blk {
				amax = max(amax, abs(v))
			}
			if e := abs(y[i] - x[i]); e > bound[typ]*amax*1.15 {
				t.Fatalf("%v: value %d: %g decodes to %g, error %g over %g of the block's max %g", typ, i, x[i], y[i], e, bound[typ], amax)
			}
			rms += float64((y[i] - x[i]) * (y[i] - x[i]))
		}
		t.Logf("%v: rms error %.3g", typ, math.Sqrt(rms/float64(len(x))))
	}
}

// Values already on a block's grid quantize to themselves.
func TestQ8_0Exact(t *testing.T) {
	x := make([]float32, 32)
	for i := range x {
		x[i] = float32(i-16) / 16 * 127 / 127
	}
	x[0] = -1
	for i := range x {
		x[i] = float32(int(x[i]*127)) / 127
	}
	b, _ := Quantize(gguf.Q8_0, x)
	y := decode(t, gguf.Q8_0, b, 32)
	for i := range x {
		if math.Abs(float64(y[i]-x[i])) > 1e-3*math.Abs(float64(x[i]))+1e-6 {
			t.Fatalf("value %d: %g -> %g", i, x[i], y[i])
		}
	}
}

func TestBadSizes(t *testing.T) {
	if _, err := Quantize(gguf.Q4_K, make([]float32, 100)); err == nil {
		t.Error("Quantize of 100 values as Q4_K: want an error")
	}
	if err := Dequantize(gguf.Q8_0, make([]byte, 33), make([]float32, 32)); err == nil {
		t.Error("Dequantize of 33 bytes of Q8_0: want an error")
	}
	if err := Dequantize(gguf.F16, make([]byte, 64), make([]float32, 32)); err == nil {
		t.Error("Dequantize of F16: want an error")
	}
}

func TestNearestInt(t *testing.T) {
	for f, want := range map[float32]int{0.5: 0, 1.5: 2, 2.5: 2, -0.5: 0, -1.5: -2, 3.49: 3, -7.6: -8} {
		if got := nearestInt(f); got != want {
			t.Errorf("nearestInt(%g) = %d, want %d", f, got, want)
		}
	}
}

func decode(t *testing.T, typ gguf.TensorType, b []byte, n int) []float32 {
	t.Helper()
	y := make([]float32, n)
	if err := Dequantize(typ, b, y); err != nil {
		t.Fatal(err)
	}
	return y
}

func check(t *testing.T, y []float32, want map[int]float32) {
	t.Helper()
	for i, w := range want {
		if y[i] != w {
			t.Errorf("value %d = %g, want %g", i, y[i], w)
		}
	}
}
