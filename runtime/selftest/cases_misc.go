package selftest

import (
	"fmt"
	"math"
	"slices"
	"unsafe"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/kernelref"
	"github.com/wspec/wspec/runtime/webgpu"
	"github.com/wspec/wspec/wgsl"
)

// The drafters' helper kernels: copy_rows (residual snapshots) and argmax_rows (greedy draft
// tokens, optionally through EAGLE-3's d2t map).

func copyRowsCases() []testCase {
	var out []testCase
	for _, width := range []int{1, 7, 33, 4097, modelDim} {
		for m := 1; m <= 3; m++ {
			out = append(out, newCase("copy_rows", "f32", fmt.Sprintf("width=%d m=%d", width, m), wgsl.F32,
				func(c *checker) { copyRowsRun(c, width, m) }))
		}
	}
	return out
}

// copyRowsRun copies m rows of stride width + 2 into columns dst_off .. dst_off + width of
// rows of stride width + dst_off + 3 (dense when m = 1); the rest, and an extra dispatched
// row, must keep their poison.
func copyRowsRun(c *checker, width, m int) {
	srcStride := width + 2
	off, dstStride := 0, width
	if m > 1 {
		off, dstStride = 2, width+5
	}
	src := c.uniform(m*srcStride, 1)
	dst := c.poisoned((m + 1) * dstStride)
	c.dispatch(runtime.StepBlock{M: uint32(m)}, runtime.KernelCall{Kernel: "copy_rows", Weights: wgsl.F32,
		Params:  runtime.CopyRowsParams{Width: uint32(width), SrcStride: uint32(srcStride), DstStride: uint32(dstStride), DstOff: uint32(off)},
		Buffers: []webgpu.Binding{{Buffer: c.f32(src)}, {Buffer: dst}},
		Grid:    runtime.Fixed(ceilDiv(width, 64), uint32(m+1), 1)})
	want := poisonSlice((m + 1) * dstStride)
	for r := 0; r < m; r++ {
		copy(want[r*dstStride+off:], src[r*srcStride:r*srcStride+width])
	}
	c.expect("dst", c.readF32(dst, len(want)), want, tolFor("copy_rows", wgsl.F32))
}

func argmaxCases() []testCase {
	var out []testCase
	for _, v := range []struct{ mapped, gumbel bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		variant := "f32"
		if v.mapped {
			variant += "+MAP"
		}
		if v.gumbel {
			variant += "+GUMBEL"
		}
		for _, cols := range []int{1, 7, 33, 4097, modelVocab} {
			for rows := 1; rows <= 3; rows++ {
				out = append(out, newCase("argmax_rows", variant, fmt.Sprintf("cols=%d rows=%d", cols, rows), wgsl.F32,
					func(c *checker) {
						if v.gumbel {
							argmaxGumbelRun(c, v.mapped, cols, rows)
						} else {
							argmaxRun(c, v.mapped, cols, rows)
						}
					}))
			}
		}
	}
	return out
}

// argmaxGumbelRun checks the sampled rows (GUMBEL) against kernelref.ArgmaxGumbel over 19
// keys at a temperature of 0.7, and over one key with draw[0] = 0 against the argmax. The
// device computes the noise's logarithms in its own f32, so a draw whose two best scores are
// closer than that rounding may differ: at most one of the case's 20 x rows draws may.
// out[0..2] and out[2 + rows] must keep their poison.
func argmaxGumbelRun(c *checker, mapped bool, cols, rows int) {
	const outOff, keys, invT = 2, 20, float32(1 / 0.7)
	x := c.randomLogits(rows*cols, 2)
	d2t := make([]uint32, cols)
	for i := range d2t {
		d2t[i] = uint32(int32(c.rng.Intn(4*cols) - i))
	}
	o := runtime.Overrides{"GUMBEL": 1}
	if mapped {
		o["MAP"] = 1
	}
	xb, mb := c.f32(x), c.u32(d2t)
	differ := 0
	for k := 0; k < keys; k++ {
		seed, pos, seq := c.rng.Uint64(), uint32(c.rng.Intn(1<<20)), uint32(c.rng.Intn(16))
		poison := make([]uint32, outOff+rows+1)
		for i := range poison {
			poison[i] = PoisonU32
		}
		out := c.u32(poison)
		it := invT
		if k == 0 {
			it = 0 // draw[0] = 0: the plain argmax
		}
		draw := c.u32([]uint32{math.Float32bits(it), uint32(seed), uint32(seed >> 32), pos, seq, PoisonU32, PoisonU32, PoisonU32})
		c.dispatch(runtime.StepBlock{M: uint32(rows)}, runtime.KernelCall{Kernel: "argmax_rows", Weights: wgsl.F32, Overrides: o,
			Params:  runtime.ArgmaxParams{Cols: uint32(cols), OutOff: outOff},
			Buffers: []webgpu.Binding{{Buffer: xb}, {Buffer: mb}, {Buffer: out}, {Buffer: draw}},
			Grid:    runtime.Fixed(uint32(rows), 1, 1)})
		got := c.readU32(out, len(poison))
		want := append([]uint32(nil), poison...)
		for r := 0; r < rows; r++ {
			var m []int32
			if mapped {
				m = make([]int32, cols)
				for i, d := range d2t {
					m[i] = int32(d)
				}
			}
			id := kernelref.ArgmaxGumbel(x[r*cols:(r+1)*cols], invT, seed, seq, pos, m)
			if it == 0 {
				id = kernelref.Argmax(x[r*cols : (r+1)*cols])
			}
			if mapped {
				id += int(int32(d2t[id]))
			}
			want[outOff+r] = uint32(id)
			if got[outOff+r] != want[outOff+r] {
				differ++
				got[outOff+r] = want[outOff+r] // counted; the rest must match exactly
			}
		}
		c.expectU32("out", got, want)
	}
	if differ > 1 {
		c.mismatch(fmt.Sprintf("%d of %d sampled draws differ from the reference's", differ, keys*rows))
	}
}

// argmaxRun checks out[2 + r] = Argmax(row r) (+ map[id] with MAP) against kernelref.Argmax, the
// second row's maximum duplicated at a random index (the lowest index wins); out[0..2] and
// out[2 + rows] must keep their poison.
func argmaxRun(c *checker, mapped bool, cols, rows int) {
	const outOff = 2
	x := c.randomLogits(rows*cols, 2)
	if rows > 1 {
		row := x[cols : 2*cols]
		row[c.rng.Intn(cols)] = row[kernelref.Argmax(row)]
	}
	d2t := make([]uint32, cols) // i32 offsets: id + d2t[id] in [0, 4*cols)
	for i := range d2t {
		d2t[i] = uint32(int32(c.rng.Intn(4*cols) - i))
	}
	o := runtime.Overrides{}
	if mapped {
		o["MAP"] = 1
	}
	poison := make([]uint32, outOff+rows+1)
	for i := range poison {
		poison[i] = PoisonU32
	}
	out := c.u32(poison)
	c.dispatch(runtime.StepBlock{M: uint32(rows)}, runtime.KernelCall{Kernel: "argmax_rows", Weights: wgsl.F32, Overrides: o,
		Params:  runtime.ArgmaxParams{Cols: uint32(cols), OutOff: outOff},
		Buffers: []webgpu.Binding{{Buffer: c.f32(x)}, {Buffer: c.u32(d2t)}, {Buffer: out}, {Buffer: c.dummy()}},
		Grid:    runtime.Fixed(uint32(rows), 1, 1)})
	want := append([]uint32(nil), poison...)
	for r := 0; r < rows; r++ {
		id := kernelref.Argmax(x[r*cols : (r+1)*cols])
		if mapped {
			id += int(int32(d2t[id]))
		}
		want[outOff+r] = uint32(id)
	}
	c.expectU32("out", c.readU32(out, len(want)), want)
}

func chainCases() []testCase {
	var out []testCase
	for _, caps := range [][]int{{4}, {1, 4, 2}, {3, 6, 6, 1, 5}} {
		for _, steps := range []int{1, 3, 6} {
			out = append(out, newCase("chain_next", "f32", fmt.Sprintf("seqs=%d steps=%d caps=%v", len(caps), steps, caps), wgsl.F32,
				func(c *checker) { chainRun(c, steps, caps) }))
		}
	}
	return out
}

// chainRun runs chain_next steps times over the sampler outputs of len(caps) sequences (one
// step of the second sequence non-finite, [0, kind, row]), sequence s with room for caps[s]
// tokens, against chainRef: each chain, its next input token, its position and the position it
// predicts; each chain's words past its cap keep their poison.
func chainRun(c *checker, steps int, caps []int) {
	const outStride, chainStride = 4, 8
	n := len(caps)
	outs := make([][]uint32, steps) // per step: the out buffer of every sequence
	for i := range outs {
		for s := range n {
			o := []uint32{1, uint32(c.rng.Intn(1000)), PoisonU32, PoisonU32}
			if i == 1 && s == 1%n {
				o = []uint32{0, 1, 0, PoisonU32}
			}
			outs[i] = append(outs[i], o...)
		}
	}
	var rowsIn []runtime.RowInfo
	var seqsIn []runtime.SeqInfo
	var chainIn, toks []uint32
	pos0 := make([]uint32, n)
	for s := range n {
		pos0[s] = uint32(5 + c.rng.Intn(100))
		rowsIn = append(rowsIn, runtime.RowInfo{Seq: uint32(s), Pos: pos0[s]})
		seqsIn = append(seqsIn, runtime.SeqInfo{PosSample: pos0[s] + 1, SeqID: 7})
		chainIn = append(chainIn, 0, uint32(caps[s]))
		chainIn = append(chainIn, slices.Repeat([]uint32{PoisonU32}, chainStride-2)...)
		toks = append(toks, PoisonU32)
	}
	out := c.u32(outs[0])
	tokens := c.u32(toks)
	rows := c.keep(c.d.UploadBytes("rows", runtime.SliceBytes(rowsIn)))
	seqs := c.keep(c.d.UploadBytes("seqs", runtime.SliceBytes(seqsIn)))
	chain := c.u32(chainIn)
	prog := c.dispatchless(runtime.KernelCall{Kernel: "chain_next", Weights: wgsl.F32,
		Params:  runtime.ChainParams{OutStride: outStride, ChainStride: chainStride},
		Buffers: []webgpu.Binding{{Buffer: out}, {Buffer: tokens}, {Buffer: rows}, {Buffer: seqs}, {Buffer: chain}},
		Grid:    runtime.Fixed(1, 1, 1)})
	for _, o := range outs {
		out.Write(0, runtime.U32Bytes(o))
		c.must(prog.Run(&runtime.StepBlock{M: uint32(n), NSeqs: uint32(n), LogitRows: uint32(n)}))
	}
	gotChain, gotTok := c.readU32(chain, n*chainStride), c.readU32(tokens, n)
	w := int(unsafe.Sizeof(runtime.SeqInfo{})) / 4 // SeqInfo's words
	gotRows, gotSeqs := c.readU32(rows, 2*n), c.readU32(seqs, w*n)
	for s := range n {
		var so [][]uint32
		for _, o := range outs {
			so = append(so, o[s*outStride:(s+1)*outStride])
		}
		wantChain, wantTok, adv := chainRef(so, caps[s])
		wantChain = append([]uint32{wantChain[0], uint32(caps[s])}, wantChain[1:]...)
		wantChain = append(wantChain, slices.Repeat([]uint32{PoisonU32}, chainStride-len(wantChain))...)
		c.expectU32(fmt.Sprintf("chain %d", s), gotChain[s*chainStride:(s+1)*chainStride], wantChain)
		c.expectU32(fmt.Sprintf("next token %d", s), gotTok[s:s+1], []uint32{wantTok})
		c.expectU32(fmt.Sprintf("row position %d", s), gotRows[2*s:2*s+2], []uint32{uint32(s), pos0[s] + adv})
		c.expectU32(fmt.Sprintf("predicted position %d", s), gotSeqs[w*s+4:w*s+5], []uint32{pos0[s] + 1 + adv})
	}
}

// chainRef is what chain_next does for one sequence over its sampler outputs outs with room
// for capTokens: the chain [count, tokens...] (0xffffffff for a non-finite step), the last
// input token it wrote (poison if none) and how many steps advanced the position (the step
// that fills the chain does not).
func chainRef(outs [][]uint32, capTokens int) ([]uint32, uint32, uint32) {
	chain := []uint32{0}
	tok, adv := PoisonU32, uint32(0)
	for _, o := range outs {
		if int(chain[0]) >= capTokens {
			break
		}
		t := uint32(0xffffffff)
		if o[0] >= 1 {
			t = o[1]
		}
		chain = append(chain, t)
		chain[0]++
		if int(chain[0]) == capTokens {
			break
		}
		tok, adv = t, adv+1
		if t == 0xffffffff {
			tok = 0
		}
	}
	return chain, tok, adv
}
