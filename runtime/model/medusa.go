package model

import (
	"encoding/binary"
	"fmt"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/webgpu"
	"github.com/wspec/wspec/weights"
)

// Medusa is a Medusa checkpoint's heads on the target model's device. Draft runs every head
// in one submit on one row of the target's hidden state and reads back only the K token ids:
//
//	row = target.Hidden()[pos - pos0]                encoder copy, before the pass
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
// vocabulary; a mismatch is an error wrapping ErrBadInput.
func NewMedusa(t *Model, w *weights.Medusa) (*Medusa, error) {
	c := t.Cfg
	switch {
	case w.Heads() == 0 || w.Layers < 1:
		return nil, fmt.Errorf("%w: Medusa checkpoint with %d heads of %d blocks", ErrBadInput, w.Heads(), w.Layers)
	case w.Dim != c.Dim:
		return nil, fmt.Errorf("%w: Medusa heads of hidden size %d for a target of hidden size %d", ErrBadInput, w.Dim, c.Dim)
	case w.Out != nil && w.Vocab != c.Vocab:
		return nil, fmt.Errorf("%w: Medusa output layers of %d tokens for a target vocabulary of %d", ErrBadInput, w.Vocab, c.Vocab)
	case w.Out != nil && len(w.Out) != w.Heads():
		return nil, fmt.Errorf("%w: %d Medusa output layers for %d heads", ErrBadInput, len(w.Out), w.Heads())
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
			return fmt.Errorf("%w: Medusa head %d has %d blocks, want %d", ErrBadInput, k, len(blocks), w.Layers)
		}
		var dev []medusaBlock
		for j, b := range blocks {
			if len(b.W) != c.Dim*c.Dim || len(b.B) != c.Dim {
				return fmt.Errorf("%w: Medusa block %d.%d has %d weights and %d biases for dim %d", ErrBadInput, k, j, len(b.W), len(b.B), c.Dim)
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
	md.stage, err = d.CreateBuffer("medusa.ids staging", uint64(4*md.K), webgpu.UsageMapRead|webgpu.UsageCopyDst)
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
		err := p.Add(runtime.KernelCall{
			Kernel: "argmax_rows", Params: runtime.ArgmaxParams{Cols: uint32(c.Vocab), OutOff: uint32(k)},
			Buffers: []webgpu.Binding{{Buffer: md.logits}, {Buffer: t.dummy}, {Buffer: md.ids}},
			Grid:    runtime.Fixed(1, 1, 1),
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

// Draft runs the first n heads (at most K) on the target's hidden state of session sess at
// position pos, which must be one of its rows in the target's last step (see
// Session.LastRows), and returns their argmax tokens: head k predicts the token at
// pos + 2 + k. Heads not asked for cost nothing (on this model each is an LM head's work).
func (md *Medusa) Draft(sess *Session, pos, n int) ([]int, error) {
	t, c := md.t, md.t.Cfg
	if n = min(n, md.K); n < 1 {
		return nil, nil
	}
	if sess.m != t {
		return nil, fmt.Errorf("%w: Medusa heads draft for a session of their own target model", ErrBadInput)
	}
	row0, pos0, rows := sess.LastRows()
	r := pos - pos0
	if rows == 0 || r < 0 || r >= rows {
		return nil, fmt.Errorf("%w: Medusa asked for position %d; the target's last step holds %d rows from %d", ErrBadInput, pos, rows, pos0)
	}
	r += row0
	rowBytes := uint64(4 * c.Dim)
	enc := t.d.NewEncoder()
	enc.Copy(t.x, uint64(r)*rowBytes, md.row, 0, rowBytes)
	md.norm.Encode(enc, &runtime.StepBlock{M: 1}, nil)
	for _, h := range md.heads[:n] {
		h.Encode(enc, &runtime.StepBlock{M: 1}, nil)
	}
	enc.Copy(md.ids, 0, md.stage, 0, uint64(4*n))
	if err := enc.Submit(); err != nil {
		return nil, err
	}
	raw := make([]byte, 4*n)
	if err := md.stage.Read(0, raw); err != nil {
		return nil, err
	}
	out := make([]int, n)
	for i := range out {
		out[i] = int(binary.LittleEndian.Uint32(raw[4*i:]))
		if out[i] >= c.Vocab {
			return nil, fmt.Errorf("runtime: Medusa head %d drafted token %d of a vocabulary of %d", i, out[i], c.Vocab)
		}
	}
	return out, nil
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
	md.lins, md.owned, md.norm, md.heads = nil, nil, nil, nil
}
