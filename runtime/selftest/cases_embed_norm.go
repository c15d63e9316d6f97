package selftest

// The embedding gather and the RMSNorm kernels' cases (the matmuls' are in cases_mat.go).

import (
	"fmt"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/kernelref"
	"github.com/wspec/wspec/runtime/webgpu"
	"github.com/wspec/wspec/wgsl"
)

func embedCases() []testCase {
	var out []testCase
	for _, wt := range weightTypes {
		for _, v := range []struct {
			split bool
			scale float32
		}{{false, 1}, {true, 1}, {false, 8}} {
			split, scale := v.split, v.scale
			variant := wt.String()
			if split {
				variant += "+split"
			}
			if scale != 1 {
				variant += "+scale" // Gemma's embedding times sqrt(hidden)
			}
			for _, dim := range []int{1, 7, 33, 4097, modelDim} {
				vocab := 37
				if dim == modelDim {
					vocab = modelVocab
				}
				for m := 1; m <= 5; m++ {
					tc := newCase("embed", variant, fmt.Sprintf("dim=%d vocab=%d m=%d", dim, vocab, m), wt,
						func(c *checker) { embedRun(c, wt, split, scale, dim, vocab, m) })
					if m%2 == 0 { // the quick tier: 1, 3 and 5 rows
						tc = fullOnly(tc)
					}
					out = append(out, tc)
				}
			}
		}
	}
	return out
}

// embedRun (embed, or embed_q for a quantized table) gathers m random rows (among them the last row and, when split, the rows either side
// of the split) of a table in runtime.Linear's blocked layout into an output one row longer
// than m, dispatching that extra row too: it must keep its poison. A split table is two
// dispatches, parts [0, h) and [h, vocab) (h a whole number of blocks), each filling only its
// own tokens. The rows are multiplied by scale.
func embedRun(c *checker, wt wgsl.WeightType, split bool, scale float32, dim, vocab, m int) {
	seen, blocked := c.tableWeights(vocab, dim, wt)
	table := blocked(0, vocab)
	h := vocab / 2 / runtime.Block * runtime.Block
	toks := make([]int, m)
	tu := make([]uint32, m)
	for i := range toks {
		toks[i] = c.rng.Intn(vocab)
		switch {
		case i == m-1 && m > 1:
			toks[i] = vocab - 1
		case i == 0 && m > 2:
			toks[i] = h
		case i == 1 && m > 3:
			toks[i] = h - 1
		}
		tu[i] = uint32(toks[i])
	}
	x := c.poisoned((m + 1) * dim)
	tb := c.u32(tu)
	call := func(part *webgpu.Buffer, row0, rows int) runtime.KernelCall {
		kernel, kg, perWG := "embed", (dim+runtime.GroupK(wt)-1)/runtime.GroupK(wt), 64
		if wt.Quantized() {
			kernel, kg, perWG = "embed_q", runtime.QuantRowVec4s(dim, wt), 64*256
		}
		return runtime.KernelCall{Kernel: kernel, Weights: wt,
			Params:  runtime.EmbedParams{Dim: uint32(dim), Rows: uint32(rows), Row0: uint32(row0), KG: uint32(kg), Scale: scale},
			Buffers: []webgpu.Binding{{Buffer: tb}, {Buffer: part}, {Buffer: x}},
			Grid:    runtime.Fixed(ceilDiv(dim, perWG), uint32(m+1), 1)}
	}
	step := runtime.StepBlock{M: uint32(m)}
	if !split || h == 0 {
		c.dispatch(step, call(table, 0, vocab))
	} else {
		c.dispatch(step, call(blocked(h, vocab), h, vocab-h), call(blocked(0, h), 0, h))
	}
	want := kernelref.Embed(seen, toks, dim)
	for i := range want {
		want[i] *= scale
	}
	want = append(want, poisonSlice(dim)...)
	c.expect("x", c.readF32(x, (m+1)*dim), want, tolFor(kernelName("embed", wt), wt))
}

func rmsnormCases() []testCase {
	var out []testCase
	for _, wt := range weightTypes {
		for _, v := range []struct{ cols, add bool }{{false, false}, {true, false}, {false, true}} {
			cols, add := v.cols, v.add
			variant := wt.String()
			if cols {
				variant += "+y_off"
			}
			if add {
				variant += "+ADD" // Gemma's norms of the attention's and MLP's outputs, added to x
			}
			for _, n := range []int{1, 7, 33, 4097, modelDim} {
				for m := 1; m <= 3; m++ {
					out = append(out, newCase("rmsnorm", variant, fmt.Sprintf("n=%d m=%d", n, m), wt,
						func(c *checker) { rmsnormRun(c, wt, cols, add, n, m) }))
				}
			}
		}
	}
	return out
}

// rmsnormRun normalises m rows into y, densely or (cols) into columns 3 .. 3+n of rows of
// stride n + 5; the other columns and an extra row (dispatched too) must keep their poison.
// With add (ADD), y holds random values to which the norm is added.
func rmsnormRun(c *checker, wt wgsl.WeightType, cols, add bool, n, m int) {
	x := c.uniform(m*n, 2)
	w := c.uniform(n, 0.5)
	for i := range w {
		w[i]++
	}
	wb, seen := c.weights(w, wt)
	off, stride, pStride := 0, n, 0
	if cols {
		off, stride, pStride = 3, n+5, n+5
	}
	y0 := poisonSlice((m + 1) * stride)
	if add {
		copy(y0, c.uniform(m*stride, 1))
	}
	y := c.f32(y0)
	o := runtime.Overrides{}
	if add {
		o["ADD"] = 1
	}
	c.dispatch(runtime.StepBlock{M: uint32(m)}, runtime.KernelCall{Kernel: "rmsnorm", Weights: wt, Overrides: o,
		Params:  runtime.RMSNormParams{N: uint32(n), Eps: eps, YStride: uint32(pStride), YOff: uint32(off)},
		Buffers: []webgpu.Binding{{Buffer: c.f32(x)}, {Buffer: wb}, {Buffer: y}},
		Grid:    runtime.Fixed(1, uint32(m+1), 1)})
	got := kernelref.RMSNorm(x, seen, m, n, eps)
	want := append([]float32(nil), y0...)
	for r := 0; r < m; r++ {
		for i, v := range got[r*n : (r+1)*n] {
			if add {
				want[r*stride+off+i] += v
			} else {
				want[r*stride+off+i] = v
			}
		}
	}
	c.expect("y", c.readF32(y, len(want)), want, tolFor("rmsnorm", wt))
}
