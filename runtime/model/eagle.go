package model

import (
	"errors"
	"fmt"
	"slices"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/runtime/kv"
	"github.com/wspec/wspec/runtime/webgpu"
	"github.com/wspec/wspec/weights"
)

// ErrEagle is wrapped by errors about an EAGLE head that does not fit its target model.
var ErrEagle = errors.New("EAGLE head does not fit the target")

// Eagle is an EAGLE-1 or EAGLE-3 drafter head on the target model's device, with its own
// paged KV cache (one layer). Its draft row p takes the token x_{p+1} and the target's
// feature of position p, at position p:
//
//	EAGLE-1: g = fc_e E[x] + fc_f rmsnorm_final(h) + b       two mat-vecs, the second ACCUM
//	EAGLE-3: g = fc [a_low; a_mid; a_high];  u = [rmsnorm_in(E x) | rmsnorm_hidden(g)]
//	x = g + Wo Attn(q, k, v)                                 q, k, v from g (1) or u (3)
//	o = x + W2 swiglu(W13 rmsnorm_post(x))
//	draft = argmax lm_head(o) (1: the target's, no norm; 3: own, after rmsnorm, via d2t)
//
// The head (weights, programs, activations and a page pool for its KV cache) is shared by
// sequences; each sequence's state is an EagleSeq, which reads the target's features from
// the sequence's feature slot (the target's step output, see features.go). Draft runs, for
// every drafting sequence in one submit, the catch-up (the head's rows of the positions the
// target verified since the last call) and the draft depths (a Program per depth, tokens
// chained through argmax_rows on the device), and reads back only the draft ids.
type Eagle struct {
	t      *Model
	d      *runtime.Device
	kind   string
	cfg    weights.Config // the head's layer
	featW  int            // width of the target feature rows (Ht or 3Ht)
	vOut   int            // logits columns (V or Vd)
	maxK   int            // most drafts per Draft
	pool   *kv.PagePool   // KV pages of every sequence
	layer  eagleLayer
	bufs   eagleBufs
	catchM *runtime.Program   // catch-up, at most 9 rows (one block)
	catchT *runtime.Program   // catch-up, more rows (blocks of 8)
	depths []*runtime.Program // depth j+1 (j = 0..maxK-2): one row, argmax into ids[j+1]
	d2t    []int64            // EAGLE-3's draft-to-target id offsets (nil: the same vocabulary)
}

// EagleSeq is one sequence's drafting state on an Eagle head: its KV pages and how far its
// cache has caught up with the target.
type EagleSeq struct {
	e         *Eagle
	slot      batch.Slot // the target's feature slot of the sequence
	seq       *kv.Sequence
	base      int       // position of cache row 0 (> 0 when early features were never seen)
	committed int       // positions < committed are in the cache (from target features)
	synced    int       // len(ctx) of the last Draft
	cache     []int     // drafts already read back for the synced context
	cacheQ    []float32 // and their distributions when sampled (nil: argmax)
}

// NewSeq starts drafting for the target sequence whose steps keep their features in slot
// (Model.NewSlot), with an empty cache.
func (e *Eagle) NewSeq(slot batch.Slot) (*EagleSeq, error) {
	if slot <= 0 || int(slot) > len(e.t.slots) {
		return nil, fmt.Errorf("%w: feature slot %d of a target with %d", batch.ErrBadInput, slot, len(e.t.slots))
	}
	return &EagleSeq{e: e, slot: slot, seq: e.pool.NewSequence()}, nil
}

// Release returns the sequence's KV pages.
func (s *EagleSeq) Release() { s.seq.Release() }

type eagleLayer struct {
	embed, fcE, fcF, fc, qkv, wo, w13, w2, lmHead *runtime.Linear
	fcBias, postNorm, inNorm, hidNorm, norm, d2t  *webgpu.Buffer
	kc, vc                                        *webgpu.Buffer
}

type eagleBufs struct {
	tok, fin, e, u, x, qkv, att, h, logits, ids, pageTable *webgpu.Buffer
	in                                                     *webgpu.Buffer // Draft's inputs: tokens, page tables, Step blocks, draw params
	draw                                                   *webgpu.Buffer // [8] u32: argmax_rows' draw params for the next program
	staging                                                *webgpu.Buffer // map-read copy of ids, per request
	q                                                      logitsStage    // sampled drafts' logits rows, slot i*maxK + j
}

// NewEagle uploads head w (in the target's weight type) next to target t. An EAGLE-3 target
// must have been made with Options.AuxLayers equal to w.AuxLayers(layers).
func NewEagle(t *Model, w *weights.Eagle) (*Eagle, error) {
	if err := w.CheckTarget(&t.Cfg); err != nil {
		return nil, err
	}
	e := &Eagle{t: t, d: t.d, kind: w.Kind, cfg: w.Cfg, featW: t.Cfg.Dim, vOut: t.Cfg.Vocab, maxK: t.Opts.MaxDraft, d2t: w.D2T}
	if w.Kind == weights.EagleKind3 {
		want, err := w.AuxLayers(t.Cfg.NLayers)
		if err != nil {
			return nil, err
		}
		if !slices.Equal(t.Opts.AuxLayers, want) {
			return nil, fmt.Errorf("%w: EAGLE-3 reads the residual entering layers %v, but the target was made with Options.AuxLayers %v",
				ErrEagle, want, t.Opts.AuxLayers)
		}
		e.featW, e.vOut = 3*t.Cfg.Dim, w.DraftVocab
	}
	c := w.Cfg
	if c.HeadDim > 256 {
		return nil, fmt.Errorf("%w: head_dim %d (the attention kernel handles at most 256)", ErrEagle, c.HeadDim)
	}
	if t.Opts.FeatureSlots == 0 {
		return nil, fmt.Errorf("%w: the head reads the target's feature slots: make the target with Options.FeatureSlots", ErrEagle)
	}
	// As many tokens as the target's cache holds, and each sequence's drafts.
	e.pool = kv.NewPagePool(t.Opts.Pages+t.Opts.MaxSeqs*(e.pagesPerSeq()-(t.Cfg.MaxSeq+t.Opts.PageSize-1)/t.Opts.PageSize), t.Opts.PageSize)

	if err := e.upload(w); err != nil {
		return nil, err
	}
	if err := e.allocate(); err != nil {
		return nil, err
	}
	var err error
	if e.catchM, err = e.record(9, true, 0); err != nil {
		return nil, err
	}
	if e.catchT, err = e.record(8, true, 0); err != nil {
		return nil, err
	}
	for j := 1; j < e.maxK; j++ {
		p, err := e.record(1, false, j)
		if err != nil {
			return nil, err
		}
		e.depths = append(e.depths, p)
	}
	return e, nil
}

// Kind is weights.EagleKind1 or weights.EagleKind3.
func (e *Eagle) Kind() string { return e.kind }

func (e *Eagle) upload(w *weights.Eagle) error {
	c, d, wt, ly := w.Cfg, e.d, e.t.Opts.Weights, &e.layer
	H, I := c.Dim, c.HiddenDim
	q, kv := c.NHeads*c.HeadDim, c.NKVHeads*c.HeadDim
	in := H
	if w.Kind == weights.EagleKind3 {
		in = 2 * H
	}
	lin := func(dst **runtime.Linear, name string, v []float32, rows, k int) func() error {
		return func() (err error) { *dst, err = d.UploadLinear("eagle."+name, v, rows, k, wt); return }
	}
	vec := func(dst **webgpu.Buffer, name string, v []float32) func() error {
		return func() (err error) {
			if v != nil {
				*dst, err = d.UploadF32("eagle."+name, v)
			}
			return
		}
	}
	steps := []func() error{
		lin(&ly.qkv, "qkv", concat(w.Wq, w.Wk, w.Wv), q+2*kv, in),
		lin(&ly.wo, "wo", w.Wo, H, q),
		lin(&ly.w13, "w13", concat(w.WGate, w.WUp), 2*I, H),
		lin(&ly.w2, "w2", w.WDown, H, I),
		vec(&ly.fcBias, "fc_bias", w.FCBias), vec(&ly.postNorm, "post_norm", w.PostNorm),
		vec(&ly.inNorm, "input_norm", w.InputNorm), vec(&ly.hidNorm, "hidden_norm", w.HidNorm),
		vec(&ly.norm, "norm", w.Norm),
	}
	ly.embed, ly.lmHead = e.t.embed, e.t.lmHead
	if w.Embed != nil {
		steps = append(steps, lin(&ly.embed, "embed", w.Embed, c.Vocab, H))
	}
	if w.Kind == weights.EagleKind1 {
		fcE, fcF := make([]float32, 0, H*H), make([]float32, 0, H*H)
		for r := range H {
			fcE = append(fcE, w.FC[r*2*H:r*2*H+H]...)
			fcF = append(fcF, w.FC[r*2*H+H:(r+1)*2*H]...)
		}
		steps = append(steps, lin(&ly.fcE, "fc_e", fcE, H, H), lin(&ly.fcF, "fc_f", fcF, H, H))
	} else {
		steps = append(steps, lin(&ly.lmHead, "lm_head", w.LMHead, w.DraftVocab, H))
		if w.FC != nil {
			steps = append(steps, lin(&ly.fc, "fc", w.FC, H, e.featW))
		}
		if w.D2T != nil {
			m := make([]uint32, len(w.D2T))
			for i, v := range w.D2T {
				m[i] = uint32(int32(v)) // |d2t| < vocab: fits
			}
			steps = append(steps, func() (err error) { ly.d2t, err = d.UploadBytes("eagle.d2t", runtime.U32Bytes(m)); return })
		}
	}
	kvBytes := uint64(e.pool.Pages() * e.pool.PageSize * kv * 4)
	steps = append(steps,
		func() (err error) { ly.kc, err = d.NewStorage("eagle.k_cache", kvBytes); return },
		func() (err error) { ly.vc, err = d.NewStorage("eagle.v_cache", kvBytes); return })
	for _, s := range steps {
		if err := s(); err != nil {
			return err
		}
	}
	return nil
}

func (e *Eagle) allocate() error {
	c, b := e.cfg, &e.bufs
	chunk := e.t.Opts.PrefillChunk
	H := c.Dim
	qkvW := (c.NHeads + 2*c.NKVHeads) * c.HeadDim
	sizes := []struct {
		b **webgpu.Buffer
		n int
		s string
	}{
		{&b.tok, chunk, "tok"}, {&b.fin, chunk * max(e.featW, H), "features"}, {&b.e, chunk * H, "embedded"},
		{&b.u, chunk * 2 * H, "u"}, {&b.x, chunk * H, "x"}, {&b.qkv, chunk * qkvW, "qkv"},
		{&b.att, chunk * c.NHeads * c.HeadDim, "att"}, {&b.h, chunk * 2 * c.HiddenDim, "h"},
		{&b.logits, e.vOut, "logits"}, {&b.ids, e.maxK, "ids"}, {&b.pageTable, e.pagesPerSeq(), "page_table"},
		{&b.in, int(e.inBytes() / 4), "inputs"}, {&b.draw, drawParamBytes / 4, "draw"},
	}
	for _, s := range sizes {
		buf, err := e.d.NewStorage("eagle."+s.s, uint64(4*s.n))
		if err != nil {
			return err
		}
		*s.b = buf
	}
	var err error
	b.staging, err = e.d.CreateBuffer("eagle.ids staging", uint64(4*e.maxK*e.t.Opts.MaxSeqs), webgpu.UsageMapRead|webgpu.UsageCopyDst)
	return err
}

// Release frees the head's device buffers (its sequences must be released first).
func (e *Eagle) Release() {
	if e.bufs.tok == nil {
		return
	}
	// The programs: their dispatches' uniform buffers and bind groups go only with them.
	for _, p := range append([]*runtime.Program{e.catchM, e.catchT}, e.depths...) {
		if p != nil {
			p.Release()
		}
	}
	e.catchM, e.catchT, e.depths = nil, nil, nil
	e.bufs.q.release()
	b, ly := &e.bufs, &e.layer
	for _, buf := range []*webgpu.Buffer{b.tok, b.fin, b.e, b.u, b.x, b.qkv, b.att, b.h, b.logits, b.ids,
		b.pageTable, b.in, b.draw, b.staging, ly.fcBias, ly.postNorm, ly.inNorm, ly.hidNorm, ly.norm, ly.d2t, ly.kc, ly.vc} {
		if buf != nil {
			buf.Release()
		}
	}
	for _, l := range []*runtime.Linear{ly.fcE, ly.fcF, ly.fc, ly.qkv, ly.wo, ly.w13, ly.w2} {
		if l != nil {
			l.Release()
		}
	}
	if ly.embed != e.t.embed {
		ly.embed.Release()
	}
	if ly.lmHead != e.t.lmHead {
		ly.lmHead.Release()
	}
}
