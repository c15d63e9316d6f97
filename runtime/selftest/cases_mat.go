package selftest

import (
	"fmt"
	"math"
	"math/rand"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/kernelref"
	"github.com/wspec/wspec/runtime/webgpu"
	"github.com/wspec/wspec/wgsl"
)

// The model-sized shapes are stories15M's: dim 288, hidden 768, vocab 32000.
const (
	modelDim    = 288
	modelHidden = 768
	modelVocab  = 32000
	eps         = 1e-5
)

var weightTypes = []wgsl.WeightType{wgsl.F32, wgsl.F16}

func ceilDiv(a, b int) uint32 { return uint32((a + b - 1) / b) }

func sqrtf(k int) float64 { return math.Sqrt(float64(k)) }

// weightCache keeps the large random weights (model-sized tables) uploaded once per Run.
type weightCache struct{ m map[string]*sharedWeights }

type sharedWeights struct {
	buf  *webgpu.Buffer
	seen []float32
}

func (wc *weightCache) release() {
	for _, s := range wc.m {
		s.buf.Release()
	}
}

// bigWeights returns n uniform values in [-scale, scale) as wtype: drawn per case when small,
// shared by every case of the Run (drawn from a source seeded by the shape) when large.
func (c *checker) bigWeights(n int, scale float64, wt wgsl.WeightType) (*webgpu.Buffer, []float32) {
	if n < 1<<20 {
		return c.weights(c.uniform(n, scale), wt)
	}
	key := fmt.Sprintf("%d/%g/%v", n, scale, wt)
	if s, ok := c.cache.m[key]; ok {
		return s.buf, s.seen
	}
	rng := rand.New(rand.NewSource(int64(n)))
	v := make([]float32, n)
	for i := range v {
		v[i] = float32((2*rng.Float64() - 1) * scale)
	}
	b, seen := c.weights(v, wt)
	c.bufs = c.bufs[:len(c.bufs)-1] // owned by the cache, not the case
	c.cache.m[key] = &sharedWeights{b, seen}
	return b, seen
}

// fusion is one combination of the matmul's override switches.
type fusion struct {
	name                                                       string
	norm, swiglu, geglu, bias, accum, last, silu, gather, keep bool
}

func (f fusion) overrides() runtime.Overrides {
	o := runtime.Overrides{}
	for _, s := range []struct {
		on   bool
		name string
	}{{f.norm, "NORM"}, {f.swiglu, "SWIGLU"}, {f.geglu, "GEGLU"}, {f.bias, "HAS_BIAS"}, {f.accum, "ACCUM"}, {f.last, "LAST_ROWS"}, {f.silu, "SILU"}, {f.gather, "GATHER"}, {f.keep, "KEEP"}} {
		if s.on {
			o[s.name] = 1
		}
	}
	return o
}

// The fusions checked: each switch alone, and the combinations the model and the drafters use.
var fusions = []fusion{
	{name: ""}, {name: "NORM", norm: true}, {name: "SWIGLU", swiglu: true},
	{name: "HAS_BIAS", bias: true}, {name: "ACCUM", accum: true}, {name: "LAST_ROWS", last: true},
	{name: "NORM+HAS_BIAS", norm: true, bias: true}, {name: "SWIGLU+ACCUM", swiglu: true, accum: true},
	{name: "NORM+SWIGLU", norm: true, swiglu: true}, {name: "NORM+LAST_ROWS", norm: true, last: true},
	{name: "NORM+GATHER", norm: true, gather: true},                    // a batch's LM head
	{name: "HAS_BIAS+SILU+ACCUM", bias: true, silu: true, accum: true}, // Medusa's residual block
	{name: "SWIGLU+GEGLU", swiglu: true, geglu: true},                  // Gemma's MLP output, normed after
	{name: "SWIGLU+ACCUM+KEEP", swiglu: true, accum: true, keep: true}, // the MLP's output before an EAGLE-3 feature layer
}

// The (N, K) shapes: awkward ones (K not a multiple of 4, N not of 8), then stories15M's FFN up
// (768, 288) and classifier.
var matShapes = [][2]int{{1, 1}, {7, 7}, {33, 33}, {4097, 7}, {7, 4097}, {modelHidden, modelDim}, {modelVocab, modelDim}}

// blockShape is a matmul dispatch's register block and workgroup: ROWS x COLS per invocation.
type blockShape struct{ rows, cols, wg int }

// The blocks checked, each with the step sizes that exercise it: one row (decode); a block
// taller than the step and one that splits it (verify); two blocks of many rows with one
// column each (prefill); and, on the subgroup kernel, one-subgroup workgroups.
var matBlocks = []struct {
	b     blockShape
	ms    []int
	sgMin uint32 // workgroups of b.wg need subgroups of at most this size (0: any)
}{
	{blockShape{1, 4, 64}, []int{1, 3}, 0},
	{blockShape{5, 2, 32}, []int{3, 9}, 32},
	{blockShape{16, 1, 64}, []int{17}, 0},
	{blockShape{9, 4, 8}, []int{9}, 8},
}

func matmulCases() []testCase {
	var out []testCase
	for _, kernel := range []string{"matmul", "matmul_wg"} {
		for _, wt := range weightTypes {
			for _, f := range fusions {
				for _, s := range matShapes {
					for _, mb := range matBlocks {
						for _, m := range mb.ms {
							// The classifier shape (157M multiply-adds in float64 a case) only
							// with the fusions a classifier has, on the first blocks.
							if s[0] == modelVocab && (m > 3 || f.swiglu || f.accum || f.silu || (f.bias && !f.norm)) {
								continue
							}
							if mb.sgMin > 0 && kernel == "matmul_wg" {
								continue
							}
							tc := linCase(kernel, wt, f, mb.b, mb.sgMin, m, s[0], s[1])
							if !quickMat(f, mb.b, s) {
								tc = fullOnly(tc)
							}
							out = append(out, tc)
						}
					}
				}
			}
		}
	}
	return out
}

// quickMat says whether a matmul case is in the quick tier: every fusion on the decode
// block (one row per invocation), the other blocks with no fusion, every awkward shape, and
// of the model-sized ones the FFN's. The fusions are mat_io.wgsl's code, the same on every
// block, and the model's tests run them on the blocks the model dispatches; the full tier
// crosses every fusion with every block. Each block x fusion x weight type is a pipeline to
// compile (multi-row blocks 1-5 s each on a CPU adapter): the quick tier compiles a third of
// the full one's.
func quickMat(f fusion, b blockShape, shape [2]int) bool {
	if shape[0] == modelVocab {
		return b.rows == 1 && f.name == "NORM+GATHER"
	}
	return b.rows == 1 || f.name == ""
}

func linCase(kernel string, wt wgsl.WeightType, f fusion, b blockShape, sgMax uint32, m, n, k int) testCase {
	size := fmt.Sprintf("m=%d N=%d K=%d block=%dx%d/%d", m, n, k, b.rows, b.cols, b.wg)
	if f.last {
		size += fmt.Sprintf(" n_draft=%d", m/2)
	}
	if f.gather {
		size += fmt.Sprintf(" gather=%d", m/2+1)
	}
	return newCase(kernel, variantName(wt, f), size, wt, func(c *checker) {
		if kernel == "matmul" && !c.d.UseSubgroups() {
			c.skip("the adapter has no subgroups (matmul_wg covers it)")
			return
		}
		if kernel == "matmul_q_sg" && !c.d.UseQuantSubgroups() {
			c.skip("the adapter has no subgroups of 8 lanes or more (matmul_q covers it)")
			return
		}
		if sgMax > 0 && c.d.Adapter.Info.SubgroupMax > sgMax {
			c.skip(fmt.Sprintf("workgroups of %d need subgroups of at most %d", b.wg, sgMax))
			return
		}
		linRun(c, kernel, wt, f, b, m, n, k)
	})
}

func variantName(wt wgsl.WeightType, f fusion) string {
	if f.name == "" {
		return wt.String()
	}
	return wt.String() + "+" + f.name
}

// linRun checks y[r, col0 + n] (+)= xin[row0 + r, :] . w[n, :] (+ bias[col0 + n]) for r <
// rows, the weight in runtime.Linear's blocked layout. One-row cases write a dense y; the
// others write columns col0 = 3 .. 3+N of a wider y (y_stride = N + 5), whose other columns
// and extra last row must keep their poison.
func linRun(c *checker, kernel string, wt wgsl.WeightType, f fusion, b blockShape, m, n, k int) {
	rows, row0, nDraft := m, 0, 0
	if f.last {
		nDraft = m / 2
		rows = nDraft + 1
		row0 = m - rows
	}
	sel := make([]uint32, 1) // GATHER: m/2 + 1 distinct rows of x in a random order
	if f.gather {
		rows = m/2 + 1
		sel = sel[:0]
		for _, r := range c.rng.Perm(m)[:rows] {
			sel = append(sel, uint32(r))
		}
	}
	col0, stride := 0, n
	if m > 1 {
		col0, stride = 3, n+5
	}
	xw := k
	if f.swiglu {
		xw = 2 * k
	}
	x := c.uniform(m*xw, 1)
	wb, w := c.matWeights(n, k, wt)
	bias := c.uniform(stride, 0.5)
	normw := c.uniform(k, 0.5)
	for i := range normw {
		normw[i]++
	}
	y0 := poisonSlice((rows + 1) * stride)
	var resid []float32 // [rows, N]
	if f.accum {
		resid = c.uniform(rows*n, 1)
		for r := 0; r < rows; r++ {
			copy(y0[r*stride+col0:], resid[r*n:(r+1)*n])
		}
	}
	y := c.f32(y0)
	// KEEP: a copy of each stored row in a wider buffer, at column keepOff + col0.
	keepStride, keepOff := stride+6, 2
	keep0 := poisonSlice((rows + 1) * keepStride)
	keep, err := c.d.Sink()
	if err != nil {
		panic(err)
	}
	if f.keep {
		keep = c.f32(keep0)
	}
	o := f.overrides()
	o["ROWS"], o["COLS"], o["WG"] = float64(runtime.MatRowsOverride(kernel, b.rows)), float64(b.cols), float64(b.wg)
	c.dispatch(runtime.StepBlock{M: uint32(m), NDraft: uint32(nDraft), LogitRows: uint32(rows)}, runtime.KernelCall{Kernel: kernel, Weights: wt, Overrides: o,
		Params: runtime.MatParams{N: uint32(n), K: uint32(k), Eps: eps, Col0: uint32(col0), YStride: uint32(stride),
			KeepStride: uint32(keepStride), KeepOff: uint32(keepOff), BlockRows: uint32(b.rows)},
		Buffers: []webgpu.Binding{{Buffer: c.f32(x)}, {Buffer: wb}, {Buffer: c.f32(bias)},
			{Buffer: c.f32(normw)}, {Buffer: y}, {Buffer: c.u32(sel)}, {Buffer: keep}},
		Grid: runtime.Fixed(ceilDiv(n, b.wg*b.cols), ceilDiv(rows, b.rows), 1)})

	xin := x[row0*xw : (row0+rows)*xw]
	if f.gather {
		xin = nil
		for _, r := range sel {
			xin = append(xin, x[int(r)*xw:(int(r)+1)*xw]...)
		}
	}
	switch {
	case f.geglu:
		var g []float32
		for r := 0; r < rows; r++ {
			g = append(g, kernelref.GeGLU(xin[r*2*k:r*2*k+k], xin[r*2*k+k:(r+1)*2*k])...)
		}
		xin = g
	case f.swiglu:
		xin = kernelref.SwiGLUPacked(xin, rows, k)
	}
	if f.norm {
		xin = kernelref.RMSNorm(xin, normw, rows, k, eps)
	}
	var bb []float32
	if f.bias {
		bb = bias[col0 : col0+n]
	}
	var got []float32
	if f.silu { // silu(x . w + bias) + resid
		got = kernelref.MatMul(xin, w, bb, nil, rows, n, k)
		for i := range got {
			got[i] = float32(kernelref.Silu(float64(got[i])))
		}
		if resid != nil {
			got = kernelref.Add(got, resid)
		}
	} else {
		got = kernelref.MatMul(xin, w, bb, resid, rows, n, k)
	}
	want := poisonSlice((rows + 1) * stride)
	for r := 0; r < rows; r++ {
		copy(want[r*stride+col0:], got[r*n:(r+1)*n])
	}
	c.expect("y", c.readF32(y, len(want)), want, tolFor(kernel, wt))
	if f.keep {
		for r := 0; r < rows; r++ {
			copy(keep0[r*keepStride+keepOff+col0:], got[r*n:(r+1)*n])
		}
		c.expect("keep", c.readF32(keep, len(keep0)), keep0, tolFor(kernel, wt))
	}
}
