// Package quant encodes and decodes ggml's block-quantized weight types (Q8_0, Q4_0, Q4_1,
// Q5_0, Q5_1, Q4_K, Q5_K, Q6_K) in pure Go: the reference the WGSL kernels are checked against
// and the quantizer behind `wspec convert --quantize`. The block layouts and the quantization
// algorithms follow ggml's reference implementations (ggml-quants.c, the *_ref functions that
// llama-quantize runs without an importance matrix), so llama.cpp reads what this writes.
//
// A row of n values of a type is n / BlockSize blocks, each a fixed number of bytes:
//
//	Q8_0  32 values  34 bytes  d f16, qs[32] int8                       v = d q
//	Q4_0  32 values  18 bytes  d f16, qs[16] (value j low nibble of qs[j], j + 16 high)
//	                                                                    v = d (q - 8)
//	Q4_1  32 values  20 bytes  d f16, m f16, qs[16]                     v = d q + m
//	Q5_0  32 values  22 bytes  d f16, qh u32 (bit j: value j's 5th bit), qs[16]
//	                                                                    v = d (q - 16)
//	Q5_1  32 values  24 bytes  d f16, m f16, qh u32, qs[16]             v = d q + m
//	Q4_K 256 values 144 bytes  d f16, dmin f16, scales[12] (8 6-bit scales and mins), qs[128]
//	                                                                    v = d sc q - dmin m
//	Q5_K 256 values 176 bytes  d, dmin, scales[12], qh[32], qs[128]     v = d sc q - dmin m
//	Q6_K 256 values 210 bytes  ql[128], qh[64], scales[16] int8, d f16  v = d sc (q - 32)
package quant

import (
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/wspec/wspec/weights/gguf"
)

// Types lists the quantized types this package encodes and decodes.
var Types = []gguf.TensorType{gguf.Q8_0, gguf.Q4_0, gguf.Q4_1, gguf.Q5_0, gguf.Q5_1, gguf.Q4_K, gguf.Q5_K, gguf.Q6_K}

// IsQuantized reports whether t is one of Types.
func IsQuantized(t gguf.TensorType) bool {
	for _, q := range Types {
		if q == t {
			return true
		}
	}
	return false
}

// codec is a type's block codec: one block of BlockSize values at a time.
type codec struct {
	decode func(b []byte, y []float32)
	encode func(x []float32, b []byte)
}

var codecs = map[gguf.TensorType]codec{
	gguf.Q8_0: {decodeQ8_0, encodeQ8_0},
	gguf.Q4_0: {decodeQ4_0, encodeQ4_0},
	gguf.Q4_1: {decodeQ4_1, encodeQ4_1},
	gguf.Q5_0: {decodeQ5_0, encodeQ5_0},
	gguf.Q5_1: {decodeQ5_1, encodeQ5_1},
	gguf.Q4_K: {decodeQ4_K, encodeQ4_K},
	gguf.Q5_K: {decodeQ5_K, encodeQ5_K},
	gguf.Q6_K: {decodeQ6_K, encodeQ6_K},
}

// blockBytes is a type's values and bytes per block.
func blockBytes(t gguf.TensorType) (values, bytes int, err error) {
	c, ok := codecs[t]
	if !ok || c.decode == nil {
		return 0, 0, fmt.Errorf("quant: %v is not a quantized type this package knows", t)
	}
	values = t.BlockSize()
	b, err := t.RowBytes(uint64(values))
	return values, int(b), err
}

// Dequantize decodes len(dst) values of type t from src, which holds exactly their blocks.
func Dequantize(t gguf.TensorType, src []byte, dst []float32) error {
	vb, bb, err := blockBytes(t)
	if err != nil {
		return err
	}
	if len(dst)%vb != 0 || len(src) != len(dst)/vb*bb {
		return fmt.Errorf("quant: %d bytes of %v for %d values: want whole blocks of %d values in %d bytes", len(src), t, len(dst), vb, bb)
	}
	dec := codecs[t].decode
	for i := 0; i < len(dst)/vb; i++ {
		dec(src[i*bb:(i+1)*bb], dst[i*vb:(i+1)*vb])
	}
	return nil
}

// Quantize encodes src (a whole number of blocks) as type t.
func Quantize(t gguf.TensorType, src []float32) ([]byte, error) {
	vb, bb, err := blockBytes(t)
	if err != nil {
		return nil, err
	}
	if len(src)%vb != 0 {
		return nil, fmt.Errorf("quant: %d values are not whole blocks of %d for %v", len(src), vb, t)
	}
	n := len(src) / vb
	out := make([]byte, n*bb)
	enc := codecs[t].encode
	// Blocks are independent: a large run is shared among the CPUs (the K types' searches
	// take about a microsecond a block).
	workers := min(runtime.NumCPU(), max(1, n/1024))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			for i := lo; i < hi; i++ {
				enc(src[i*vb:(i+1)*vb], out[i*bb:(i+1)*bb])
			}
		}(n*w/workers, n*(w+1)/workers)
	}
	wg.Wait()
	return out, nil
}

// nearestInt rounds as ggml's nearest_int does (to nearest, ties to even, through the float
// mantissa): the quantizers must round exactly as llama-quantize does.
func nearestInt(f float32) int {
	v := f + 12582912
	return int(int32(math.Float32bits(v)&0x007fffff) - 0x00400000)
}
