package model

import (
	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/webgpu"
)

// Release frees the model's device memory: weights, KV pages, activations. The model and its
// sessions are unusable afterwards. Pipelines stay cached on the device for the next model.
func (m *Model) Release() {
	if m.embed == nil {
		return
	}
	linears := []*runtime.Linear{m.embed}
	if m.lmHead != m.embed {
		linears = append(linears, m.lmHead)
	}
	bufs := []*webgpu.Buffer{m.norm, m.x, m.qkv, m.att, m.h, m.aux, m.post, m.tokens, m.rows, m.blocks, m.seqs,
		m.pageTable, m.rowsel, m.logits, m.res, m.drafts, m.q, m.out, m.staging, m.dummy, m.adj, m.lp, m.lpStaging, m.feat}
	for _, ly := range m.layers {
		linears = append(linears, ly.qkv, ly.wo, ly.w13, ly.w2)
		bufs = append(bufs, ly.attnNorm, ly.ffnNorm, ly.qkvBias, ly.qkNorm, ly.postAttn, ly.postFFN, ly.kc, ly.vc)
	}
	if m.chainSt != nil {
		m.chainSt.release()
		m.chainSt = nil
	}
	for _, p := range []*runtime.Program{m.decode, m.prefill} {
		if p != nil {
			p.Release()
		}
	}
	for _, v := range m.verify {
		if v != nil {
			v.Release()
		}
	}
	for _, l := range linears {
		if l != nil {
			l.Release()
		}
	}
	for _, b := range bufs {
		if b != nil {
			b.Release()
		}
	}
	m.embed, m.lmHead, m.layers = nil, nil, nil
}
