package runtime

import (
	"bytes"
	"encoding/binary"
)

// The Go mirrors of the kernels' uniform blocks. Every field is 4 bytes, in WGSL order, and
// each struct's size is a multiple of 16 (uniform layout); TestUniformMirrors checks both
// against the WGSL source.

// StepBlock mirrors common.wgsl's Step: what changes from one forward step to the next.
type StepBlock struct {
	M           uint32  // new tokens in this step
	Pos0        uint32  // position of the first new token
	NDraft      uint32  // draft tokens among them; logits rows sampled = NDraft + 1
	Seq         uint32  // sequence id (random key)
	SeedLo      uint32  // seed, low word
	SeedHi      uint32  // seed, high word
	Temperature float32 // <= 0: greedy
	TopP        float32 // 1: off
	TopK        uint32  // 0: off
	HasQ        uint32  // draft probabilities given
	Vocab       uint32  // logits row width
	Pad         uint32
}

// EmbedParams mirrors embed.wgsl's Params.
type EmbedParams struct{ Dim, Rows, Row0, K4 uint32 }

// RMSNormParams mirrors rmsnorm.wgsl's Params.
type RMSNormParams struct {
	N       uint32
	Eps     float32
	YStride uint32 // 0: N
	YOff    uint32
}

// MatParams mirrors mat_io.wgsl's Params (matmul.wgsl, matmul_wg.wgsl).
type MatParams struct {
	N, K    uint32
	Eps     float32
	Col0    uint32 // first output column of this part of the weight
	YStride uint32
	A, B, C uint32
}

// RopeParams mirrors rope_kv.wgsl's Params.
type RopeParams struct {
	NHeads, NKV, HeadDim, PageSize               uint32
	Theta, Factor, LowFreq, HighFreq, OrigMaxPos float32
	A, B, C                                      uint32
}

// AttnParams mirrors attention.wgsl's Params.
type AttnParams struct {
	NHeads, NKV, HeadDim, PageSize, QStride uint32
	Scale                                   float32
	A, B                                    uint32
}

// SampleParams mirrors sample.wgsl's Params.
type SampleParams struct{ Vocab, A, B, C uint32 }

// paramBytes is the little-endian image of a params struct.
func paramBytes(v any) []byte {
	var b bytes.Buffer
	if err := binary.Write(&b, binary.LittleEndian, v); err != nil {
		panic("runtime: params struct with a non-fixed-size field: " + err.Error())
	}
	return b.Bytes()
}

// CopyRowsParams mirrors copy_rows.wgsl's Params.
type CopyRowsParams struct{ Width, SrcStride, DstStride, DstOff uint32 }

// ArgmaxParams mirrors argmax_rows.wgsl's Params.
type ArgmaxParams struct{ Cols, OutOff, A, B uint32 }
