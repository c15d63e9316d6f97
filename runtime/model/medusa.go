package model

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/runtime/webgpu"
	"github.com/wspec/wspec/weights"
)

// Medusa is a Medusa checkpoint's heads on the target model's device. Draft runs the heads
// on one row of the target's hidden state per sequence (kept in the sequence's feature
// slot), every sequence in one submit, and reads back only the token ids:
//
//	row = slot[pos]                                  encoder copy, before the pass
//	h = rmsnorm(row, target.FinalNorm())             rmsnorm
//	for each head k:
//	    z = h
//	    for each block j:                            (ping-pong between two buffers)
//	        z' = z;  z' += silu(W_kj z + b_kj)       copy_rows; matvec SILU + HAS_BIAS + ACCUM
//	    logits = Out_k z   (v2: target.LMHead() z)   matvec
//	    ids[k] = argmax(logits)                      argmax_rows
//
// The programs are recorded once (their Step block always has M = 1): the norm, then one per
// head, so that a call for n drafts runs only the first n heads.
type Medusa struct {
	t      *Model
	K, R   int
	blocks [][]medusaBlock   // [K][R]
	out    []*runtime.Linear // [K]; nil: the target's LM head
	row    *webgpu.Buffer    // [dim]: the hidden row read
	h      *webgpu.Buffer    // [dim]: rmsnorm(row)
	z      [2]*webgpu.Buffer
	logits *webgpu.Buffer     // [vocab]
	ids    *webgpu.Buffer     // [K] u32
	stage  *webgpu.Buffer     // map-read copy of ids
	draw   *webgpu.Buffer     // [8] u32: argmax_rows' draw params for the next head
	drawIn *webgpu.Buffer     // [MaxSeqs, K] draw params, written once a Draft
	q      logitsStage        // sampled heads' logits rows, slot i*K + k
	norm   *runtime.Program   // rmsnorm of the row
	heads  []*runtime.Program // [K]: head k's blocks, output layer and argmax
	owned  []*webgpu.Buffer
	lins   []*runtime.Linear
}

type medusaBlock struct {
	w *runtime.Linear
	b *webgpu.Buffer
}

// NewMedusa uploads w (in the target's weight type) and records its program. The heads'
// hidden size must be the target's dim, and their output layers (if any) the target's
// vocabulary; a mismatch is an error wrapping batch.ErrBadInput.
func NewMedusa(t *Model, w *weights.Medusa) (*Medusa, error) {
	c := t.Cfg
	switch {
	case w.Heads() == 0 || w.Layers < 1:
		return nil, fmt.Errorf("%w: Medusa checkpoint with %d heads of %d blocks", batch.ErrBadInput, w.Heads(), w.Layers)
	case w.Dim != c.Dim:
		return nil, fmt.Errorf("%w: Medusa heads of hidden size %d for a target of hidden size %d", batch.ErrBadInput, w.Dim, c.Dim)
	case w.Out != nil && w.Vocab != c.Vocab:
		return nil, fmt.Errorf("%w: Medusa output layers of %d tokens for a target vocabulary of %d", batch.ErrBadInput, w.Vocab, c.Vocab)
	case t.Opts.FeatureSlots == 0 || len(t.Opts.AuxLayers) > 0:
		return nil, fmt.Errorf("%w: Medusa heads read the hidden state kept in feature slots: make the target with Options.FeatureSlots and no AuxLayers", batch.ErrBadInput)
	case w.Out != nil && len(w.Out) != w.Heads():
		return nil, fmt.Errorf("%w: %d Medusa output layers for %d heads", batch.ErrBadInput, len(w.Out), w.Heads())
	}
	md := &Medusa{t: t, K: w.Heads(), R: w.Layers}
	if err := md.upload(w); err != nil {
		md.Release()
		return nil, err
	}
	if err := md.record(); err != nil {
		md.Release()
		return nil, err
	}
	return md, nil
}

func (md *Medusa) upload(w *weights.Medusa) error {
	d, c, wt := md.t.d, md.t.Cfg, md.t.Opts.Weights
	type key struct{ w, b *float32 }
	seen := map[key]medusaBlock{} // blocks sharing weights are uploaded once
	for k, blocks := range w.Blocks {
		if len(blocks) != w.Layers {
			return fmt.Errorf("%w: Medusa head %d has %d blocks, want %d", batch.ErrBadInput, k, len(blocks), w.Layers)
		}
		var dev []medusaBlock
		for j, b := range blocks {
			if len(b.W) != c.Dim*c.Dim || len(b.B) != c.Dim {
				return fmt.Errorf("%w: Medusa block %d.%d has %d weights and %d biases for dim %d", batch.ErrBadInput, k, j, len(b.W), len(b.B), c.Dim)
			}
			id := key{&b.W[0], &b.B[0]}
			if db, ok := seen[id]; ok {
				dev = append(dev, db)
				continue
			}
			lin, err := d.UploadLinear(fmt.Sprintf("medusa.%d.%d", k, j), b.W, c.Dim, c.Dim, wt)
			if err != nil {
				return err
			}
			md.lins = append(md.lins, lin)
			bias, err := d.UploadF32(fmt.Sprintf("medusa.%d.%d.bias", k, j), b.B)
			if err != nil {
				return err
			}
			md.owned = append(md.owned, bias)
			seen[id] = medusaBlock{w: lin, b: bias}
			dev = append(dev, seen[id])
		}
		md.blocks = append(md.blocks, dev)
		var out *runtime.Linear
		if w.Out != nil {
			var err error
			if out, err = d.UploadLinear(fmt.Sprintf("medusa.%d.out", k), w.Out[k], c.Vocab, c.Dim, wt); err != nil {
				return err
			}
			md.lins = append(md.lins, out)
		}
		md.out = append(md.out, out)
	}
	bufs := []struct {
		b     **webgpu.Buffer
		bytes int
		name  string
	}{
		{&md.row, 4 * c.Dim, "medusa.row"}, {&md.h, 4 * c.Dim, "medusa.h"}, {&md.z[0], 4 * c.Dim, "medusa.z0"},
		{&md.z[1], 4 * c.Dim, "medusa.z1"}, {&md.logits, 4 * c.Vocab, "medusa.logits"}, {&md.ids, 4 * md.K, "medusa.ids"},
		{&md.draw, drawParamBytes, "medusa.draw"}, {&md.drawIn, drawParamBytes * md.K * md.t.Opts.MaxSeqs, "medusa.draw_in"},
	}
	for _, s := range bufs {
		b, err := d.NewStorage(s.name, uint64(s.bytes))
		if err != nil {
			return err
		}
		md.owned = append(md.owned, b)
		*s.b = b
	}
	var err error
	md.stage, err = d.CreateBuffer("medusa.ids staging", uint64(4*md.K*md.t.Opts.MaxSeqs), webgpu.UsageMapRead|webgpu.UsageCopyDst)
	if err == nil {
		md.owned = append(md.owned, md.stage)
	}
	return err
}

func (md *Medusa) record() error {
	t, c := md.t, md.t.Cfg
	p, err := t.d.NewProgram()
	if err != nil {
		return err
	}
	md.norm = p
	dim := uint32(c.Dim)
	rows := func(s *runtime.StepBlock) (uint32, uint32, uint32) { return runtime.CeilDiv(dim, 64), s.M, 1 }
	err = p.Add(runtime.KernelCall{
		Kernel: "rmsnorm", Params: runtime.RMSNormParams{N: dim, Eps: float32(c.RMSEps)},
		Buffers: []webgpu.Binding{{Buffer: md.row}, {Buffer: t.norm}, {Buffer: md.h}},
		Grid:    func(s *runtime.StepBlock) (uint32, uint32, uint32) { return 1, s.M, 1 },
	})
	if err != nil {
		return err
	}
	for k := range md.K {
		if p, err = t.d.NewProgram(); err != nil {
			return err
		}
		md.heads = append(md.heads, p)
		src := md.h
		for j, b := range md.blocks[k] {
			dst := md.z[j%2]
			err := p.Add(runtime.KernelCall{
				Kernel:  "copy_rows",
				Params:  runtime.CopyRowsParams{Width: dim, SrcStride: dim, DstStride: dim},
				Buffers: []webgpu.Binding{{Buffer: src}, {Buffer: dst}},
				Grid:    rows,
			})
			if err != nil {
				return err
			}
			f := runtime.MatFusion{Bias: b.b, SiLU: true, Accum: true}
			if err := p.AddMat(fmt.Sprintf("medusa.%d.%d", k, j), b.w, src, dst, c.Dim, f, 1, t.dummy); err != nil {
				return err
			}
			src = dst
		}
		out := md.out[k]
		if out == nil {
			out = t.lmHead
		}
		if err := p.AddMat(fmt.Sprintf("medusa.%d.out", k), out, src, md.logits, c.Vocab, runtime.MatFusion{}, 1, t.dummy); err != nil {
			return err
		}
		err := p.Add(runtime.KernelCall{ // draw (copied in before each head) says argmax or sample
			Kernel: "argmax_rows", Params: runtime.ArgmaxParams{Cols: uint32(c.Vocab), OutOff: uint32(k)},
			Overrides: runtime.Overrides{"GUMBEL": 1},
			Buffers:   []webgpu.Binding{{Buffer: md.logits}, {Buffer: t.dummy}, {Buffer: md.ids}, {Buffer: md.draw}},
			Grid:      runtime.Fixed(1, 1, 1),
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// Heads is K, the number of heads (drafts per call).
func (md *Medusa) Heads() int { return md.K }

// Dispatches is the number of dispatches of a Draft of all K heads.
func (md *Medusa) Dispatches() int {
	n := md.norm.Len()
	for _, h := range md.heads {
		n += h.Len()
	}
	return n
}

// MedusaDraft is one sequence's part of a Medusa.Draft call.
type MedusaDraft struct {
	Slot batch.Slot // the sequence's feature slot on the target (the hidden state of its last step)
	Pos  int        // the position whose hidden state the heads read: one of the slot's rows
	N    int        // the heads to run (at most K): head k predicts the token at Pos + 2 + k
	// Sampling is how the target samples the sequence: at a temperature, each head samples its
	// draft from softmax(logits / T) with the target's key and noise at its position (draw.go)
	// and Q returns those distributions; greedy, the heads take the argmax (Q nil).
	Sampling batch.Sampling
	Out      []int     // set by Draft: the heads' tokens
	Q        []float32 // set by Draft when sampling: [len(Out), vocab]
}

// Draft runs, for each request, the first N heads on the hidden state at Pos that the
// target's last step of that sequence kept in its slot, all requests in one submit with one
// readback of the token ids. Heads not asked for cost nothing (on a small model each is an
// LM head's work).
func (md *Medusa) Draft(reqs []MedusaDraft) error {
	t, c := md.t, md.t.Cfg
	if len(reqs) > t.Opts.MaxSeqs {
		return fmt.Errorf("%w: %d Medusa drafts in one call (at most %d)", batch.ErrBadInput, len(reqs), t.Opts.MaxSeqs)
	}
	rowBytes := uint64(4 * c.Dim)
	var draws []byte
	invT := make([]float32, len(reqs))
	for i := range reqs {
		r := &reqs[i]
		if r.Sampling.Temperature > 0 {
			invT[i] = 1 / r.Sampling.Temperature
		}
		for k := range md.K {
			draws = append(draws, drawParams(invT[i], r.Sampling, r.Pos+2+k)...)
		}
	}
	md.drawIn.Write(0, draws)
	if slices.ContainsFunc(invT, func(v float32) bool { return v > 0 }) {
		if err := md.q.ensure(t.d, "medusa.logits staging", c.Vocab, md.K*t.Opts.MaxSeqs); err != nil {
			return err
		}
	}
	enc := t.d.NewEncoder()
	encoded, sampled := false, false
	for i := range reqs {
		r := &reqs[i]
		r.Out, r.Q = nil, nil
		if r.N = min(r.N, md.K); r.N < 1 {
			continue
		}
		sampled = sampled || invT[i] > 0
		if pos0, n := t.SlotRows(r.Slot); r.Pos < pos0 || r.Pos >= pos0+n {
			enc.Discard()
			return fmt.Errorf("%w: Medusa asked for position %d; the sequence's last step kept %d rows from %d", batch.ErrBadInput, r.Pos, n, pos0)
		}
		src, off := t.SlotBuffer(r.Slot, r.Pos)
		enc.Copy(src, off, md.row, 0, rowBytes)
		md.norm.Encode(enc, &runtime.StepBlock{M: 1}, nil)
		for k, h := range md.heads[:r.N] {
			enc.Copy(md.drawIn, uint64((i*md.K+k)*drawParamBytes), md.draw, 0, drawParamBytes)
			h.Encode(enc, &runtime.StepBlock{M: 1}, nil)
			if invT[i] > 0 {
				md.q.keep(enc, md.logits, 0, i*md.K+k)
			}
		}
		enc.Copy(md.ids, 0, md.stage, uint64(4*i*md.K), uint64(4*r.N))
		encoded = true
	}
	if !encoded {
		enc.Discard()
		return nil
	}
	if err := enc.Submit(); err != nil {
		return err
	}
	raw := make([]byte, 4*len(reqs)*md.K)
	if err := md.stage.Read(0, raw); err != nil {
		return err
	}
	var logits []byte
	if sampled {
		var err error
		if logits, err = md.q.read(len(reqs) * md.K); err != nil {
			return err
		}
	}
	for i := range reqs {
		r := &reqs[i]
		for k := range max(r.N, 0) {
			tok := int(binary.LittleEndian.Uint32(raw[4*(i*md.K+k):]))
			if tok >= c.Vocab {
				return fmt.Errorf("model: Medusa head %d drafted token %d of a vocabulary of %d", k, tok, c.Vocab)
			}
			r.Out = append(r.Out, tok)
		}
		if invT[i] > 0 && r.N > 0 {
			r.Q = md.q.q(logits, i*md.K, r.N, invT[i], nil, c.Vocab)
		}
	}
	return nil
}

// Release frees the heads' device buffers (the target's are untouched).
func (md *Medusa) Release() {
	for _, l := range md.lins {
		l.Release()
	}
	for _, b := range md.owned {
		b.Release()
	}
	for _, p := range append([]*runtime.Program{md.norm}, md.heads...) {
		if p != nil {
			p.Release()
		}
	}
	md.q.release()
	md.lins, md.owned, md.norm, md.heads = nil, nil, nil, nil
}
