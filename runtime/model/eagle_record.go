package model

import (
	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/webgpu"
	"github.com/wspec/wspec/weights"
	"github.com/wspec/wspec/wgsl"
)

// record builds one program of the head, its matmuls in blocks of rows: the catch-up (catchup, over the step's rows, the
// features in fin being the target's) or draft depth `depth` (one row, the feature in fin
// row 0 being the previous depth's output o). Either ends with the argmax of the last row's
// logits written to ids[depth]:
//
//	e = embed[tok]
//	EAGLE-1: x = fc_e e + b;  x += fc_f f   (f = rmsnorm_final(fin) at the catch-up, fin after)
//	         qkv = Wqkv x
//	EAGLE-3: u[:, :H] = rmsnorm_in(e)
//	         x = fc fin (catch-up, when 3Ht != H) or x = fin (copy_rows)
//	         u[:, H:] = rmsnorm_hidden(x);  qkv = Wqkv u
//	rope_kv; attention; x += Wo att; h = W13 rmsnorm_post(x); x += W2 swiglu(h)
//	logits = lm_head(x last row)  (EAGLE-3: rmsnorm_norm first)
//	ids[depth] = argmax logits  (EAGLE-3: + d2t), or a draw from softmax(logits / T) when
//	             the draw params say so (argmax_rows' GUMBEL)
func (e *Eagle) record(rows int, catchup bool, depth int) (*runtime.Program, error) {
	c, ly, b, d := e.cfg, &e.layer, &e.bufs, e.d
	p, err := d.NewProgram()
	if err != nil {
		return nil, err
	}
	H, hd := c.Dim, c.HeadDim
	eps := float32(c.RMSEps)
	qkvW := (c.NHeads + 2*c.NKVHeads) * hd
	dummy := e.t.dummy
	rowGrid := func(s *runtime.StepBlock) (uint32, uint32, uint32) { return runtime.CeilDiv(uint32(H), 64), s.M, 1 }
	normInto := func(src, w *webgpu.Buffer, off int) error {
		return p.Add(runtime.KernelCall{
			Kernel: "rmsnorm", Weights: wgsl.F32,
			Params:  runtime.RMSNormParams{N: uint32(H), Eps: eps, YStride: uint32(2 * H), YOff: uint32(off)},
			Buffers: []webgpu.Binding{{Buffer: src}, {Buffer: w}, {Buffer: b.u}},
			Grid:    func(s *runtime.StepBlock) (uint32, uint32, uint32) { return 1, s.M, 1 },
		})
	}
	if err := p.AddEmbed(ly.embed, b.tok, b.e, 1); err != nil {
		return nil, err
	}
	qkvIn := b.x
	if e.kind == weights.EagleKind1 {
		if err := p.AddMat("eagle.fc_e", ly.fcE, b.e, b.x, H, runtime.MatFusion{Bias: ly.fcBias}, rows, dummy); err != nil {
			return nil, err
		}
		f := runtime.MatFusion{Accum: true}
		if catchup {
			f.Norm, f.Eps = e.t.norm, float32(e.t.Cfg.RMSEps)
		}
		if err := p.AddMat("eagle.fc_f", ly.fcF, b.fin, b.x, H, f, rows, dummy); err != nil {
			return nil, err
		}
	} else {
		qkvIn = b.u
		if err := normInto(b.e, ly.inNorm, 0); err != nil {
			return nil, err
		}
		if catchup && ly.fc != nil {
			err = p.AddMat("eagle.fc", ly.fc, b.fin, b.x, H, runtime.MatFusion{}, rows, dummy)
		} else {
			err = p.Add(runtime.KernelCall{
				Kernel:  "copy_rows",
				Params:  runtime.CopyRowsParams{Width: uint32(H), SrcStride: uint32(H), DstStride: uint32(H)},
				Buffers: []webgpu.Binding{{Buffer: b.fin}, {Buffer: b.x}},
				Grid:    rowGrid,
			})
		}
		if err != nil {
			return nil, err
		}
		if err := normInto(b.x, ly.hidNorm, H); err != nil {
			return nil, err
		}
	}
	if err := p.AddMat("eagle.qkv", ly.qkv, qkvIn, b.qkv, qkvW, runtime.MatFusion{}, rows, dummy); err != nil {
		return nil, err
	}
	attn := runtime.AttnBuffers{QKV: b.qkv, PageTable: b.pageTable, KC: ly.kc, VC: ly.vc, Out: b.att, Dummy: dummy}
	if err := p.AddAttention(&c, e.pool.PageSize, rows, attn); err != nil {
		return nil, err
	}
	if err := p.AddMat("eagle.wo", ly.wo, b.att, b.x, H, runtime.MatFusion{Accum: true}, rows, dummy); err != nil {
		return nil, err
	}
	if err := p.AddMat("eagle.w13", ly.w13, b.x, b.h, 2*c.HiddenDim, runtime.MatFusion{Norm: ly.postNorm, Eps: eps}, rows, dummy); err != nil {
		return nil, err
	}
	if err := p.AddMat("eagle.w2", ly.w2, b.h, b.x, H, runtime.MatFusion{SwiGLU: true, Accum: true}, rows, dummy); err != nil {
		return nil, err
	}
	head := runtime.MatFusion{LastRows: true}
	if e.kind == weights.EagleKind3 {
		head.Norm, head.Eps = ly.norm, eps
	}
	if err := p.AddMat("eagle.lm_head", ly.lmHead, b.x, b.logits, e.vOut, head, 1, dummy); err != nil {
		return nil, err
	}
	o := runtime.Overrides{"GUMBEL": 1} // draw (written before each encode) says argmax or sample
	mp := dummy
	if ly.d2t != nil {
		o["MAP"], mp = 1, ly.d2t
	}
	err = p.Add(runtime.KernelCall{
		Kernel: "argmax_rows", Overrides: o,
		Params:  runtime.ArgmaxParams{Cols: uint32(e.vOut), OutOff: uint32(depth)},
		Buffers: []webgpu.Binding{{Buffer: b.logits}, {Buffer: mp}, {Buffer: b.ids}, {Buffer: b.draw}},
		Grid:    runtime.Fixed(1, 1, 1),
	})
	return p, err
}
