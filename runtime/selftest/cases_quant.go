package selftest

import (
	"fmt"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/webgpu"
	"github.com/wspec/wspec/weights/gguf"
	"github.com/wspec/wspec/weights/quant"
	"github.com/wspec/wspec/wgsl"
)

// The quantized kernels (matmul_q, embed_q) against weights/quant's decoder: the reference
// computes on the decoded weights, so the kernels' error is their accumulation order alone.

// quantKs are the row lengths checked for a quantized type: one block, a few, stories15M's
// 288 (32-value types) or 768, and one that leaves a partial chunk of 256 values.
func quantKs(wt wgsl.WeightType) []int {
	if gguf.TensorType(wt.GGML()).BlockSize() == 256 {
		return []int{256, 768, 4352}
	}
	return []int{32, 96, modelDim, 4128}
}

// kernelName is the kernel that runs an op (embed, matmul_wg) for weight type wt.
func kernelName(op string, wt wgsl.WeightType) string {
	if !wt.Quantized() {
		return op
	}
	if op == "embed" {
		return "embed_q"
	}
	return "matmul_q"
}

// quantized returns rows x k uniform values in [-scale, scale) quantized as wt: the GGUF bytes
// and the values they decode to.
func (c *checker) quantized(rows, k int, scale float64, wt wgsl.WeightType) ([]byte, []float32) {
	raw, err := quant.Quantize(gguf.TensorType(wt.GGML()), c.uniform(rows*k, scale))
	if err != nil {
		panic(err) // the cases' shapes are whole blocks
	}
	seen := make([]float32, rows*k)
	if err := quant.Dequantize(gguf.TensorType(wt.GGML()), raw, seen); err != nil {
		panic(err)
	}
	return raw, seen
}

// matWeights is an [n, k] weight of type wt in runtime.Linear's layout and the values it holds.
func (c *checker) matWeights(n, k int, wt wgsl.WeightType) (*webgpu.Buffer, []float32) {
	if !wt.Quantized() {
		_, w := c.bigWeights(n*k, 1/sqrtf(k), wt)
		b, _ := c.weights(runtime.BlockedLayout(w, n, k, wt), wt) // already representable: the same bits
		return b, w
	}
	raw, seen := c.quantized(n, k, 1/sqrtf(k), wt)
	return c.quantBuffer(raw, n, k, wt), seen
}

// tableWeights is a [vocab, dim] table of type wt: the values it holds, and a function that
// uploads its rows r0 .. r1 in runtime.Linear's layout.
func (c *checker) tableWeights(vocab, dim int, wt wgsl.WeightType) ([]float32, func(r0, r1 int) *webgpu.Buffer) {
	if !wt.Quantized() {
		_, seen := c.bigWeights(vocab*dim, 1, wt)
		return seen, func(r0, r1 int) *webgpu.Buffer {
			b, _ := c.weights(runtime.BlockedLayout(seen[r0*dim:r1*dim], r1-r0, dim, wt), wt) // already representable
			return b
		}
	}
	raw, seen := c.quantized(vocab, dim, 1, wt)
	rb := len(raw) / vocab
	return seen, func(r0, r1 int) *webgpu.Buffer { return c.quantBuffer(raw[r0*rb:r1*rb], r1-r0, dim, wt) }
}

func (c *checker) quantBuffer(raw []byte, rows, k int, wt wgsl.WeightType) *webgpu.Buffer {
	b, err := runtime.QuantLayout(raw, rows, k, wt)
	if err != nil {
		panic(err)
	}
	return c.keep(c.d.UploadBytes("selftest "+wt.String(), b))
}

// The matmul_q fusions: the plain product, and those the model uses on its weights.
var quantFusions = []fusion{
	{name: ""}, {name: "NORM", norm: true}, {name: "SWIGLU+ACCUM", swiglu: true, accum: true},
	{name: "NORM+HAS_BIAS", norm: true, bias: true}, {name: "NORM+GATHER", norm: true, gather: true},
	{name: "SWIGLU+GEGLU", swiglu: true, geglu: true}, {name: "NORM+LAST_ROWS", norm: true, last: true},
	{name: "SWIGLU+ACCUM+KEEP", swiglu: true, accum: true, keep: true},
}

// The quantized kernels' blocks, for both: one row (decode), a verify block, a prefill block,
// and a workgroup of 32 (matmul_q stages a chunk of 64 vec4s in two passes), in the columns
// an invocation runtime.AddMat gives a quantized weight: 2 (1 for the prefill block), and
// runtime.MatCols's for matmul_q_sg's decode block.
var quantBlocks = []struct {
	b     blockShape
	ms    []int
	sgMin uint32
}{
	{blockShape{1, 2, 64}, []int{1, 3}, 0},
	{blockShape{5, 2, 32}, []int{9}, 32},
	{blockShape{16, 1, 64}, []int{17}, 0},
	{blockShape{3, 2, 32}, []int{3}, 32},
}

// matmulQCases: every type plain on every block and shape, and every fusion at decode on
// N = 33 (on the verify and prefill blocks, the gathered, normed LM head) for Q4_K and Q8_0
// (the K types' and the 32-value types' decoding, Q8_0's at 2-byte offsets), for both
// quantized kernels. The fusions are the float kernels' code (mat_io.wgsl) and the decoding is
// the type's, so they are crossed sparsely: each pipeline costs seconds to compile on a CPU
// adapter (its 8 groups are written out). The quick tier: every type plain at decode, Q8_0 on
// a verify block in the subgroup kernel (the one adapters with subgroups run), the LM head's
// fusion on Q4_K in both; the other fusions are the float kernels' code, which the quick tier
// crosses with every float kernel (each quantized fusion took 4-7 s to compile cold on lavapipe).
func matmulQCases() []testCase {
	var out []testCase
	for _, kernel := range []string{"matmul_q", "matmul_q_sg"} {
		blocks := append(quantBlocks[:0:0], quantBlocks...)
		if kernel == "matmul_q_sg" {
			blocks[0].b.cols = runtime.MatCols(kernel, 1)
		}
		for _, wt := range wgsl.QuantizedTypes() {
			ks := quantKs(wt)
			for _, k := range ks {
				for _, n := range []int{1, 7, 33, modelHidden} {
					for _, f := range quantFusions {
						for bi, qb := range blocks {
							for _, m := range qb.ms {
								switch {
								case f.name != "" && wt != wgsl.Q4_K && wt != wgsl.Q8_0, // fusions on two types
									f.name != "" && n != 33,                           // fusions on one shape
									bi > 0 && f.name != "" && f.name != "NORM+GATHER", // other blocks: plain, LM head
									n == modelHidden && k > 1024:
									continue
								}
								tc := linCase(kernel, wt, f, qb.b, qb.sgMin, m, n, k)
								quick := k == ks[0] && (f.name == "" && n == 7 && (bi == 0 || wt == wgsl.Q8_0 && bi == 1 && kernel == "matmul_q_sg") ||
									wt == wgsl.Q4_K && bi == 0 && m == 1 && n == 33 && f.name == "NORM+GATHER")
								if !quick {
									tc = fullOnly(tc)
								}
								out = append(out, tc)
							}
						}
					}
				}
			}
		}
	}
	return out
}

func embedQCases() []testCase {
	var out []testCase
	for _, wt := range wgsl.QuantizedTypes() {
		for _, split := range []bool{false, true} {
			variant := wt.String()
			if split {
				variant += "+split"
			}
			for _, dim := range quantKs(wt) {
				for _, m := range []int{1, 4} {
					tc := newCase("embed_q", variant, fmt.Sprintf("dim=%d vocab=37 m=%d", dim, m), wt,
						func(c *checker) { embedRun(c, wt, split, 1, dim, 37, m) })
					if m == 4 && split {
						tc = fullOnly(tc)
					}
					out = append(out, tc)
				}
			}
		}
	}
	return out
}
