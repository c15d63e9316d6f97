package runtime

import (
	"bytes"
	"encoding/binary"

	"github.com/wspec/wspec/runtime/batch"
)

// The Go mirrors of the kernels' uniform blocks. Every field is 4 bytes, in WGSL order, and
// each struct's size is a multiple of 16 (uniform layout); TestUniformMirrors checks both
// against the WGSL source.

// StepBlock mirrors common.wgsl's Step: what changes from one forward step to the next.
type StepBlock struct {
	M         uint32 // rows (new tokens) in this step
	Pos0      uint32 // one-sequence programs (drafter heads): position of row 0
	NDraft    uint32 // one-sequence programs: drafts among the rows (LAST_ROWS reads n_draft + 1)
	NSeqs     uint32 // batched programs: sequences in the step
	LogitRows uint32 // batched programs: rows the LM head and the sampler see
	NBlocks   uint32 // batched programs: attention blocks
	DrawRows  uint32 // batched programs: logits rows that sample at a temperature (sample_draw)
	B         uint32
}

// RowInfo mirrors common.wgsl's RowInfo: a batched step's row.
type RowInfo struct{ Seq, Pos uint32 }

// AttnBlock mirrors common.wgsl's Block: consecutive rows of one sequence that attention takes
// together.
type AttnBlock struct{ Row0, Rows uint32 }

// SeqInfo mirrors common.wgsl's SeqInfo: a batched step's sequence.
type SeqInfo struct {
	PageOff     uint32  // its page table's offset in the page-table buffer
	LogitRow0   uint32  // its first row among the step's logits rows
	NDraft      uint32  // drafts among its rows: it samples from its last NDraft + 1 rows
	Sampled     uint32  // 1: it samples this step
	PosSample   uint32  // position of the token its first logits row predicts
	DraftOff    uint32  // offset of its drafts in the drafts buffer (and of their rows in q)
	SeedLo      uint32  // its random key: seed, low and high words, and sequence id
	SeedHi      uint32  //
	SeqID       uint32  //
	Temperature float32 // <= 0: greedy
	TopP        float32 // 1: off
	TopK        uint32  // 0: off
	HasQ        uint32  // draft probabilities given
	MinP        float32 // 0: off
	Presence    float32 // penalties (0, 0, 1: off)
	Frequency   float32 //
	Repetition  float32 //
	AdjOff      uint32  // its logit adjustments: Adj entries [AdjOff, AdjOff+AdjLen)
	AdjLen      uint32  //
	Logprobs    uint32  // 0: none; 1 + n: each sampling row's logprobs and its n likeliest
	MaskOff     uint32  // 0: none; else its rows' token masks in the drafts buffer, from this word on
}

// LogprobStride is the words per logits row in sample_rows.wgsl's lp output: lp(draft),
// lp(token), rank(draft), rank(token), then MaxTopLogprobs pairs (id, lp).
const LogprobStride = 4 + 2*batch.MaxTopLogprobs

// RowResult mirrors sample_rows.wgsl's RowResult: what the sampler's pick reads of a row.
type RowResult struct {
	Tok   uint32
	Ratio float32
	Bad   uint32
	A     uint32
}

// EmbedParams mirrors embed.wgsl's Params.
type EmbedParams struct {
	Dim, Rows, Row0, KG uint32 // KG: the table's groups a row (GroupK; embed_q: vec4<u32>s)
	Scale               float32
	A, B, C             uint32
}

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
	// KeepStride and KeepOff place the KEEP copy: keep[r, KeepOff + col].
	KeepStride, KeepOff uint32
	// BlockRows is the height of a block of rows (grid.y walks the blocks): the ROWS override,
	// except in matmul_q_sg, whose pipelines for more than one row serve every height up to
	// MaxBlockRows (MatRowsOverride).
	BlockRows uint32
}

// RopeParams mirrors rope_kv.wgsl's Params.
type RopeParams struct {
	NHeads, NKV, HeadDim, PageSize               uint32
	Theta, Factor, LowFreq, HighFreq, OrigMaxPos float32
	A, B, C                                      uint32
}

// QKNormParams mirrors qk_norm.wgsl's Params.
type QKNormParams struct {
	NHeads, NKV, HeadDim uint32
	Eps                  float32
}

// AttnParams mirrors attention.wgsl's Params.
type AttnParams struct {
	NHeads, NKV, HeadDim, PageSize, QStride uint32
	Scale                                   float32
	Window, B                               uint32
}

// SampleParams mirrors sample_rows.wgsl's and sample_pick.wgsl's Params.
type SampleParams struct{ Vocab, OutStride, A, B uint32 }

// ParamBytes is the little-endian image of a params (or other fixed-size) struct.
func ParamBytes(v any) []byte {
	var b bytes.Buffer
	if err := binary.Write(&b, binary.LittleEndian, v); err != nil {
		panic("runtime: params struct with a non-fixed-size field: " + err.Error())
	}
	return b.Bytes()
}

// CopyRowsParams mirrors copy_rows.wgsl's Params.
type CopyRowsParams struct{ Width, SrcStride, DstStride, DstOff uint32 }

// ChainParams mirrors chain_next.wgsl's Params.
type ChainParams struct{ OutStride, ChainStride, A, B uint32 }

// ArgmaxParams mirrors argmax_rows.wgsl's Params.
type ArgmaxParams struct{ Cols, OutOff, A, B uint32 }

// SliceBytes is the little-endian image of a slice of fixed-size structs (an array of them
// in a storage buffer, whose stride is the struct's size: every mirror is 4-byte fields).
func SliceBytes[T any](v []T) []byte {
	var out []byte
	for _, x := range v {
		out = append(out, ParamBytes(x)...)
	}
	return out
}
