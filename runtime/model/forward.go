package model

import (
	"fmt"
	"slices"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/webgpu"
	"github.com/wspec/wspec/wgsl"
)

// record builds the dispatch list of one forward step over a batch of rows, reading like the
// maths. rows is the matmuls' block height (1: decode; the batch's rows; 8: prefill, in
// blocks), lmRows the LM head's:
//
//	x = embed[tokens]                                  embed
//	for each layer:
//	    aux[:, j] = x   (layer j of Opts.AuxLayers)    copy_rows, or KEEP in the w2 before
//	    qkv = [Wq; Wk; Wv] rmsnorm(x) (+ b)            matmul NORM (+HAS_BIAS)
//	    q, k = rope(q, k); cache[pos] = k, v           rope_kv (each row's position and pages)
//	    att = softmax(q k^T / sqrt(hd)) v              attention (paged, causal, GQA, per sequence)
//	    x += Wo att                                    matmul ACCUM
//	    h = [Wgate; Wup] rmsnorm(x)                    matmul NORM
//	    x += Wdown (silu(gate) * up)                   matmul SWIGLU + ACCUM
//	(Gemma: x scaled in embed; q and k normalized in qk_norm; attention windowed in sliding
//	layers; Wo att and the MLP's output go to post, then x += rmsnorm(post), rmsnorm ADD;
//	gelu_tanh for silu, matmul GEGLU)
//	logits = lm_head rmsnorm(x[rows that sample])      matmul NORM + GATHER
//	res = per row: argmax                              sample_rows (greedy rows)
//	      or p'(draft)/q'(draft) and a sample          sample_draw (other rows; only in steps that have them)
//	out = per sequence: accepted drafts + 1 token      sample_pick
//
// The RMSNorms ride in the matmuls that read their output: each workgroup gathers the row's
// sum of squares while it reads the row anyway, so a norm costs no pass and no dispatch.
func (m *Model) record(rows, lmRows int) (*runtime.Program, error) {
	c, o, d := m.Cfg, m.Opts, m.d
	p, err := d.NewProgram()
	if err != nil {
		return nil, err
	}
	eps := float32(c.RMSEps)
	hd := c.HeadDim
	qkvW := (c.NHeads + 2*c.NKVHeads) * hd
	embedScale := float32(1)
	if c.EmbedScale > 0 {
		embedScale = float32(c.EmbedScale)
	}
	if err := p.AddEmbed(m.embed, m.tokens, m.x, embedScale); err != nil {
		return nil, err
	}
	// keepAt[i] is the feature whose copy the residual matmul ending layer i-1 stores as it
	// writes the input of layer i (KEEP): no dispatch of its own. The embedding's copy, a layer
	// named twice and Gemma's residual (added by rmsnorm, not a matmul) take copy_rows.
	keepAt := map[int]int{}
	for j, al := range o.AuxLayers {
		if _, dup := keepAt[al]; al > 0 && !dup && !c.PostNorms {
			keepAt[al] = j
		}
	}
	auxStride := len(o.AuxLayers) * c.Dim
	for i, ly := range m.layers {
		name := func(s string) string { return fmt.Sprintf("layers.%d.%s", i, s) }
		for j, al := range o.AuxLayers {
			if fused, ok := keepAt[i]; al != i || ok && fused == j {
				continue
			}
			err := p.Add(runtime.KernelCall{
				Kernel: "copy_rows",
				Params: runtime.CopyRowsParams{Width: uint32(c.Dim), SrcStride: uint32(c.Dim),
					DstStride: uint32(auxStride), DstOff: uint32(j * c.Dim)},
				Buffers: []webgpu.Binding{{Buffer: m.x}, {Buffer: m.aux}},
				Grid:    func(s *runtime.StepBlock) (uint32, uint32, uint32) { return runtime.CeilDiv(uint32(c.Dim), 64), s.M, 1 },
			})
			if err != nil {
				return nil, err
			}
		}
		attn := runtime.AttnBuffers{QKV: m.qkv, PageTable: m.pageTable, KC: ly.kc, VC: ly.vc, Out: m.att, KVType: o.KVType, QKNorm: ly.qkNorm,
			Rows: m.rows, Seqs: m.seqs, Blocks: m.blocks, Dummy: m.dummy, Layer: i}
		// out adds a matmul's output to x: fused (ACCUM), or through Gemma's norm of it.
		out := func(label string, w *runtime.Linear, in *webgpu.Buffer, f runtime.MatFusion, norm *webgpu.Buffer) error {
			if !c.PostNorms {
				f.Accum = true
				return p.AddMat(name(label), w, in, m.x, c.Dim, f, rows, m.dummy)
			}
			if err := p.AddMat(name(label), w, in, m.post, c.Dim, f, rows, m.dummy); err != nil {
				return err
			}
			return p.Add(runtime.KernelCall{
				Kernel: "rmsnorm", Weights: wgsl.F32, Overrides: runtime.Overrides{"ADD": 1},
				Params:  runtime.RMSNormParams{N: uint32(c.Dim), Eps: eps},
				Buffers: []webgpu.Binding{{Buffer: m.post}, {Buffer: norm}, {Buffer: m.x}},
				Grid:    func(s *runtime.StepBlock) (uint32, uint32, uint32) { return 1, s.M, 1 },
			})
		}
		steps := []func() error{
			func() error {
				return p.AddMat(name("qkv"), ly.qkv, m.x, m.qkv, qkvW, runtime.MatFusion{Norm: ly.attnNorm, Eps: eps, Bias: ly.qkvBias}, rows, m.dummy)
			},
			func() error { return p.AddAttention(&c, o.PageSize, rows, attn) },
			func() error { return out("wo", ly.wo, m.att, runtime.MatFusion{}, ly.postAttn) },
			func() error {
				return p.AddMat(name("w13"), ly.w13, m.x, m.h, 2*c.HiddenDim, runtime.MatFusion{Norm: ly.ffnNorm, Eps: eps}, rows, m.dummy)
			},
			func() error {
				f := runtime.MatFusion{SwiGLU: true, GeGLU: c.GeluTanh}
				if j, ok := keepAt[i+1]; ok {
					f.Keep, f.KeepStride, f.KeepOff = m.aux, auxStride, j*c.Dim
				}
				return out("w2", ly.w2, m.h, f, ly.postFFN)
			},
		}
		for _, s := range steps {
			if err := s(); err != nil {
				return nil, err
			}
		}
	}
	if err := p.AddMat("lm_head", m.lmHead, m.x, m.logits, c.Vocab, runtime.MatFusion{Norm: m.norm, Eps: eps, Gather: m.rowsel}, lmRows, m.dummy); err != nil {
		return nil, err
	}
	sp := runtime.SampleParams{Vocab: uint32(c.Vocab), OutStride: uint32(o.MaxDraft + 2)}
	for _, c := range SamplerCalls(sp, []webgpu.Binding{{Buffer: m.logits}, {Buffer: m.drafts}, {Buffer: m.q}, {Buffer: m.rowsel},
		{Buffer: m.rows}, {Buffer: m.seqs}, {Buffer: m.res}, {Buffer: m.adj}, {Buffer: m.lp}}) {
		if err := p.Add(c); err != nil {
			return nil, err
		}
	}
	err = p.Add(runtime.KernelCall{
		Kernel: "sample_pick", Params: sp,
		Buffers: []webgpu.Binding{{Buffer: m.drafts}, {Buffer: m.seqs}, {Buffer: m.res}, {Buffer: m.out}},
		Grid:    func(s *runtime.StepBlock) (uint32, uint32, uint32) { return runtime.CeilDiv(s.NSeqs, 64), 1, 1 },
	})
	return p, err
}

// verifyRows are the block heights of the verify programs: a step of M rows runs the
// smallest that holds them all, recorded at its first use; more rows run the prefill program.
var verifyRows = [...]int{2, 3, 5, 9, 16}

// VerifyRows lists the verify programs' block heights (a step of up to each runs one).
func VerifyRows() []int { return verifyRows[:] }

// program returns the program for a step of rows rows and its matmuls' block height: decode
// (one row), a verify program (the rows in one block), or prefill (blocks of 8).
func (m *Model) program(rows int) (*runtime.Program, int, error) {
	if rows == 1 {
		return m.decode, 1, nil
	}
	for i, vr := range verifyRows {
		if rows > vr {
			continue
		}
		if m.verify[i] == nil {
			p, err := m.record(vr, vr)
			if err != nil {
				return nil, 0, err
			}
			m.verify[i] = p
		}
		return m.verify[i], vr, nil
	}
	return m.prefill, prefillBlock, nil
}

// prefillBlock is the prefill program's block height: a step of more rows than the largest
// verify program runs in blocks of this many.
const prefillBlock = 8

// Dispatches is the number of dispatches of one decode step.
func (m *Model) Dispatches() int { return m.decode.Len() }

// Logits reads the first rows logits rows of the last step ([rows, vocab]: a sequence's
// sampled rows, in the order of the step); for tests and tools.
func (m *Model) Logits(rows int) ([]float32, error) {
	return m.d.ReadF32(m.logits, rows*m.Cfg.Vocab)
}

// SamplerCalls are the per-row half of the sampler: sample_rows (greedy rows) and sample_draw
// (rows at a temperature), the latter dispatched only in steps with such rows (Step.DrawRows),
// so that a greedy run never compiles it. b are their bindings: logits, drafts, q (which
// sample_rows does not declare), and the rest.
func SamplerCalls(sp runtime.SampleParams, b []webgpu.Binding) []runtime.KernelCall {
	noQ := slices.Clone(b)
	noQ[2] = webgpu.Binding{}
	return []runtime.KernelCall{
		{Kernel: "sample_rows", Params: sp, Buffers: noQ,
			Grid: func(s *runtime.StepBlock) (uint32, uint32, uint32) { return s.LogitRows, 1, 1 }},
		{Kernel: "sample_draw", Params: sp, Buffers: b,
			Grid: func(s *runtime.StepBlock) (uint32, uint32, uint32) { // every row: each finds its own
				if s.DrawRows == 0 {
					return 0, 1, 1
				}
				return s.LogitRows, 1, 1
			}},
	}
}
