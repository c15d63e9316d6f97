package runtime

import (
	"fmt"
	"math"

	"github.com/wspec/wspec/runtime/webgpu"
	"github.com/wspec/wspec/weights"
	"github.com/wspec/wspec/wgsl"
)

// The recorded ops that the target model and the drafter heads share.

// AddEmbed records out[m, :] = table[tokens[m], :] * scale for the step's rows (scale 1, or
// Gemma's sqrt(hidden)): one dispatch per part of the table (embed_q for a quantized part).
func (p *Program) AddEmbed(table *Linear, tokens, out *webgpu.Buffer, scale float32) error {
	dim := uint32(table.K)
	for _, part := range table.parts {
		kernel, kg, perWG := "embed", uint32((table.K+GroupK(part.wt)-1)/GroupK(part.wt)), uint32(64)
		if part.wt.Quantized() { // an invocation per chunk of 256 values
			kernel, kg, perWG = "embed_q", uint32(QuantRowVec4s(table.K, part.wt)), 64*256
		}
		err := p.Add(KernelCall{
			Kernel: kernel, Weights: part.wt,
			Params:  EmbedParams{Dim: dim, Rows: uint32(part.rows), Row0: uint32(part.row0), KG: kg, Scale: scale},
			Buffers: []webgpu.Binding{{Buffer: tokens}, {Buffer: part.buf}, {Buffer: out}},
			Grid:    func(s *StepBlock) (uint32, uint32, uint32) { return CeilDiv(dim, perWG), s.M, 1 },
		})
		if err != nil {
			return fmt.Errorf("embed: %w", err)
		}
	}
	return nil
}

// AttnBuffers are one attention layer's buffers. Rows, Seqs and Blocks make the step batched
// (positions, page tables and attention blocks per row and sequence: see common.wgsl); without
// them it is one sequence, whose rows are at positions pos0.. and whose page table starts at
// PageTable's first entry. Dummy (at least 64 bytes) stands in for the buffers not used.
type AttnBuffers struct {
	QKV, PageTable, KC, VC, Out *webgpu.Buffer
	QKNorm                      *webgpu.Buffer  // [2, hd] f32, q_norm then k_norm: with Config.QKNorm
	Layer                       int             // the layer of the Config recorded (its rope base and window)
	KVType                      wgsl.WeightType // KC and VC hold f32 or f16
	Rows, Seqs, Blocks          *webgpu.Buffer
	Dummy                       *webgpu.Buffer
}

// AttentionBlockRows is the most rows one attention task takes together (they share each key
// and value read, and their queries stay in registers) in a program whose matmul blocks hold
// rows rows, for heads of headDim.
func AttentionBlockRows(rows, headDim int) int {
	return max(1, min(rows, 8, 64/max(1, headDim/4)))
}

// AddAttention records the attention block of one layer of architecture c over a paged KV
// cache, the new tokens of a sequence in blocks of AttentionBlockRows(rows, c.HeadDim):
// qk_norm (with c.QKNorm: q and k heads RMS-normalized in place), rope_kv (q rotated in place
// in qkv, k rotated and v copied into the pages of kc and vc at the tokens' positions) and
// attention (att [m, n_heads * hd] from q and the cache). qkv is [m, (n_heads + 2 n_kv) * hd],
// q heads first.
func (p *Program) AddAttention(c *weights.Config, pageSize, rows int, b AttnBuffers) error {
	hd := c.HeadDim
	batch := b.Rows != nil
	if c.QKNorm {
		if b.QKNorm == nil {
			panic("runtime: AddAttention of a q/k-norm model without its norm weights")
		}
		heads := uint32(c.NHeads + c.NKVHeads)
		err := p.Add(KernelCall{
			Kernel: "qk_norm", Params: QKNormParams{NHeads: uint32(c.NHeads), NKV: uint32(c.NKVHeads), HeadDim: uint32(hd), Eps: float32(c.RMSEps)},
			Buffers: []webgpu.Binding{{Buffer: b.QKV}, {Buffer: b.QKNorm}},
			Grid:    func(s *StepBlock) (uint32, uint32, uint32) { return heads, s.M, 1 },
		})
		if err != nil {
			return err
		}
	}
	rope := RopeParams{NHeads: uint32(c.NHeads), NKV: uint32(c.NKVHeads), HeadDim: uint32(hd),
		PageSize: uint32(pageSize), Theta: float32(c.LayerRopeTheta(b.Layer))}
	o := Overrides{}
	if rs := c.RopeScaling; rs != nil && !c.Sliding(b.Layer) {
		o["LLAMA3"] = 1
		rope.Factor, rope.LowFreq, rope.HighFreq = float32(rs.Factor), float32(rs.LowFreqFactor), float32(rs.HighFreqFactor)
		rope.OrigMaxPos = float32(rs.OriginalMaxPos)
		if rs.Linear {
			// Linear scaling is llama3's with every wavelength long: past an original context of
			// 1 at low frequency factor 1 (every wavelength is at least 2 pi), each frequency is
			// divided by the factor. One kernel variant serves both.
			rope.LowFreq, rope.HighFreq, rope.OrigMaxPos = 1, 2, 1
		}
	}
	rowsB, seqsB, blocksB := orDummy(b.Rows, b.Dummy), orDummy(b.Seqs, b.Dummy), orDummy(b.Blocks, b.Dummy)
	if batch {
		o["BATCH"] = 1
	}
	work := uint32((c.NHeads+c.NKVHeads)*hd/2 + c.NKVHeads*hd) // rotation pairs + v elements
	err := p.Add(KernelCall{
		Kernel: "rope_kv", Weights: b.KVType, Overrides: o, Params: rope,
		Buffers: []webgpu.Binding{{Buffer: b.QKV}, {Buffer: b.PageTable}, {Buffer: b.KC}, {Buffer: b.VC}, {Buffer: rowsB}, {Buffer: seqsB}},
		Grid:    func(s *StepBlock) (uint32, uint32, uint32) { return CeilDiv(work, 64), s.M, 1 },
	})
	if err != nil {
		return err
	}
	heads := uint32(c.NHeads)
	kernel, grid := "attention_wg", func(s *StepBlock) (uint32, uint32, uint32) { return heads, s.M, 1 }
	ao := Overrides{}
	if p.d.UseSubgroups() && hd%4 == 0 && hd/4 <= 64 && hd/4 <= 8*int(p.d.Adapter.Info.SubgroupMin) {
		// One subgroup per (block of tokens, head), in workgroups of one subgroup: CPU adapters
		// run a workgroup on one thread, and a decode step has only as many tasks as heads.
		kernel = "attention"
		r := uint32(AttentionBlockRows(rows, hd))
		ao = Overrides{"WG": float64(p.d.Adapter.Info.SubgroupMax), "ROWS": float64(r)}
		grid = func(s *StepBlock) (uint32, uint32, uint32) { return heads * CeilDiv(s.M, r), 1, 1 }
		if batch {
			grid = func(s *StepBlock) (uint32, uint32, uint32) { return heads * s.NBlocks, 1, 1 }
		}
	}
	if batch {
		ao["BATCH"] = 1
	}
	window := 0
	if c.Sliding(b.Layer) {
		window = c.SlidingWindow
	}
	return p.Add(KernelCall{
		Kernel: kernel, Weights: b.KVType, Overrides: ao,
		Params: AttnParams{NHeads: heads, NKV: uint32(c.NKVHeads), HeadDim: uint32(hd), PageSize: uint32(pageSize),
			QStride: uint32((c.NHeads + 2*c.NKVHeads) * hd), Scale: float32(attnScale(c)), Window: uint32(window)},
		Buffers: []webgpu.Binding{{Buffer: b.QKV}, {Buffer: b.PageTable}, {Buffer: b.KC}, {Buffer: b.VC}, {Buffer: b.Out},
			{Buffer: rowsB}, {Buffer: seqsB}, {Buffer: blocksB}},
		Grid: grid,
	})
}

// attnScale is what the attention scores of c are multiplied by: 1/sqrt(head_dim), or
// Gemma's query_pre_attn_scalar^-0.5.
func attnScale(c *weights.Config) float64 {
	if c.AttnScale > 0 {
		return c.AttnScale
	}
	return 1 / math.Sqrt(float64(c.HeadDim))
}
